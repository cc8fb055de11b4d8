"""A record of what a fault scenario's clients were promised and what they got, and a checker that
judges it afterwards (Jepsen's way: inject faults while clients work, decide from the history).

Recorded: every acknowledged publication (channel, offset, epoch, a hash of its payload), every
publication each client received, every recovery signal a client was given (a subscribe with
`recovered` and `was_recovering`, an unsubscribe with its code), and the windows in which a client
or a publisher could not work. The checker, per channel and client:
- offsets strictly increase within an epoch, and none comes twice;
- a received payload is the acknowledged one for its offset, byte for byte;
- every gap (offsets acknowledged but not received, the tail after the last receipt included) was
  told: a subscribe after it said `recovered` false, or an unsubscribe ended the subscription;
- every acknowledged publication is in the channel's history after the run (for a durable namespace).
It reports each unavailability window and the longest per kind.
"""
import hashlib
import json
import time


def digest(payload):
    """The payload's SHA-256: bytes as they are, anything else as its canonical JSON."""
    if not isinstance(payload, (bytes, bytearray)):
        payload = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(payload).hexdigest()


class History:
    def __init__(self):
        # channel → offset → (epoch, digest)
        self.acknowledged = {}
        # (client, channel) → events in arrival order: ("pub", offset, epoch, digest) or
        # ("subscribed", recovered, was_recovering, epoch) or ("unsubscribed", code)
        self.events = {}
        # kind → list of (who, start, end)
        self.windows = {}
        self.open_windows = {}

    def ack(self, channel, offset, epoch, payload):
        self.acknowledged.setdefault(channel, {})[offset] = (epoch, digest(payload))

    def received(self, client, channel, offset, epoch, payload):
        self.events.setdefault((client, channel), []).append(("pub", offset, epoch, digest(payload)))

    def subscribed(self, client, channel, recovered, was_recovering, epoch=""):
        self.events.setdefault((client, channel), []).append(("subscribed", recovered, was_recovering, epoch))

    def unsubscribed(self, client, channel, code):
        self.events.setdefault((client, channel), []).append(("unsubscribed", code))

    def down(self, kind, who, at=None):
        """`who` cannot work from `at` (now by default) until `up`."""
        self.open_windows.setdefault((kind, who), at if at is not None else time.monotonic())

    def up(self, kind, who, at=None):
        start = self.open_windows.pop((kind, who), None)
        if start is not None:
            self.windows.setdefault(kind, []).append((who, start, at if at is not None else time.monotonic()))

    def reached(self, channel, offset):
        """Whether every client of `channel` has received `offset`, or its subscription ended (an
        unsubscribe with nothing after it)."""
        return all(
            any(event[0] == "pub" and event[1] == offset for event in events) or events[-1][0] == "unsubscribed"
            for (_, subscribed), events in self.events.items() if subscribed == channel)

    def longest_windows(self):
        """kind → the longest window in seconds (open windows count to now)."""
        now = time.monotonic()
        spans = {kind: [end - start for _, start, end in windows] for kind, windows in self.windows.items()}
        for (kind, _), start in self.open_windows.items():
            spans.setdefault(kind, []).append(now - start)
        return {kind: max(values) for kind, values in spans.items() if values}

    def check(self, histories=None):
        """Every violation found, as sentences (an empty list: the run kept every promise).
        `histories`: channel → {offset: (epoch, digest)} read from the server after the run, for the
        channels whose publications must all still be there."""
        problems = []
        for (client, channel), events in sorted(self.events.items()):
            problems += self.check_client(client, channel, events)
        for channel, kept in (histories or {}).items():
            for offset, (epoch, hashed) in sorted(self.acknowledged.get(channel, {}).items()):
                if kept.get(offset) != (epoch, hashed):
                    problems.append(f"{channel}: acknowledged offset {offset} is {'altered' if offset in kept else 'missing'} in history")
        return problems

    def check_client(self, client, channel, events):
        problems = []
        name = f"{client} on {channel}"
        acknowledged = self.acknowledged.get(channel, {})
        seen = set()
        last = None  # (epoch, offset) of the last publication received
        told = True  # whether a gap from here on has been told
        for event in events:
            if event[0] == "subscribed":
                # A subscribe that did not recover (a fresh one, or a recovery that failed) tells
                # the client to load what it missed itself.
                if not event[1]:
                    told = True
                continue
            if event[0] == "unsubscribed":
                told = True
                continue
            _, offset, epoch, hashed = event
            if (epoch, offset) in seen:
                problems.append(f"{name}: offset {offset} received twice")
                continue
            seen.add((epoch, offset))
            if offset in acknowledged and acknowledged[offset] != (epoch, hashed):
                problems.append(f"{name}: offset {offset} is not what was acknowledged")
            if last is not None and last[0] == epoch:
                if offset <= last[1]:
                    problems.append(f"{name}: offset {offset} after {last[1]}")
                elif offset > last[1] + 1 and not told:
                    missed = [o for o in range(last[1] + 1, offset) if o in acknowledged]
                    if missed:
                        problems.append(f"{name}: offsets {missed[0]}–{missed[-1]} missed and not told")
            last = (epoch, offset)
            told = False
        if last is not None and not told:
            tail = [o for o, (epoch, _) in acknowledged.items() if epoch == last[0] and o > last[1]]
            if tail:
                problems.append(f"{name}: offsets {min(tail)}–{max(tail)} acknowledged after its last receipt never arrived")
        return problems
