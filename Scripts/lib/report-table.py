"""Turns gondola-load JSON reports into Markdown table rows (used by Scripts/loadtest and Scripts/bench-peers).

  report-table.py travellers FILE...         one row per traveller run
  report-table.py chat FILE[#LABEL]...       one row per chat run, LABEL added to its first column
  report-table.py peers SATURATED FIXED ...  rows of the side-by-side table, from triples
                                             "target subscribers saturated.json fixed.json"
  report-table.py cluster FILE#ENGINE...            fan-out runs of Scripts/bench-cluster (FILE.engine beside
  report-table.py cluster-travellers FILE#ENGINE... each: the engine's CPU seconds before, after, and the run's seconds)
  report-table.py cluster-bus FILE#ENGINE#CHANNEL...
  report-table.py cluster-regions BASE#ENGINE#NODES...  BASE-0.json and BASE-1.json (one per resort), BASE.engine,
                                                        BASE-nodeI.metrics (gondola_regional_events_total lines)
  report-table.py bandwidth FILE...          one row per traveller run of Scripts/bench-bandwidth; ratios
                                             against the first (plain JSON)
  report-table.py storm NAME#SIGNAL#LIMIT#BASE...  one row per run of Scripts/bench-storm: BASE.json (the report),
                                                   BASE.peaks.json (Scripts/lib/process-peaks.py), BASE.down (seconds)
  report-table.py scale SERVER#FILE[#PRESENCE]...  one row per server of Scripts/bench-scale; PRESENCE is
                                                   Scripts/lib/bench-api-calls.py's output
"""
import json
import sys


def load(path):
    with open(path) as handle:
        return json.load(handle)


def latency(report, kind, field="p99"):
    summary = report["latencies"].get(kind)
    return f"{summary[field]:.1f}" if summary else "–"


def errors(report):
    return sum(report["connectionErrors"].values()) + sum(report["errorReplies"].values())


def cpu(figures):
    return f"{figures['cpuPercent']:.0f}%" if figures else "–"


def waiting(figures):
    wait = (figures or {}).get("runQueueWaitPercent")
    return f"{wait:.0f}%" if wait is not None else "–"


def travellers(paths):
    for path in paths:
        report = load(path)
        updates = report["figures"].get("location_updates_per_second", 0)
        print(f"| {report['settings']['travellers']} | {report['connected']}/{report['connections']} | {updates:.0f} "
              f"| {report['messagesInPerSecond']:.0f} | {latency(report, 'location', 'p50')} | {latency(report, 'location')} "
              f"| {latency(report, 'location', 'p999')} | {latency(report, 'chat')} | {latency(report, 'ack location.update')} "
              f"| {errors(report)} | {report['reconnects']} | {cpu(report.get('server'))} | {cpu(report.get('client'))} |")


def chat(paths):
    # Each argument is a report, optionally followed by "#label" for the row.
    for argument in paths:
        path, _, label = argument.partition("#")
        report = load(path)
        settings, seconds = report["settings"], report["measuredSeconds"]
        kind = f"group of {settings['group_size']}" if settings["mode"] == "group" else "1:1"
        kind = f"{kind}, {label}" if label else kind
        acks = report["latencies"].get("ack chat.send", {}).get("count", 0)
        deliveries = report["latencies"].get("chat", {}).get("count", 0)
        print(f"| {kind} | {report['connected']}/{report['connections']} | {settings['rate']} "
              f"| {report['figures'].get('sent_per_second', 0):.0f} | {acks / seconds:.0f} | {deliveries / seconds:.0f} "
              f"| {latency(report, 'ack chat.send', 'p50')} | {latency(report, 'ack chat.send')} | {latency(report, 'ack chat.send', 'p999')} "
              f"| {latency(report, 'chat')} | {errors(report)} | {cpu(report.get('server'))} | {waiting(report.get('server'))} "
              f"| {cpu(report.get('client'))} | {waiting(report.get('client'))} |")


def peers(triples):
    rows = []
    for index in range(0, len(triples), 4):
        target, subscribers, saturated, fixed = triples[index:index + 4]
        rows.append((target, int(subscribers), load(saturated), load(fixed)))
    nats = {subscribers: (s, f) for target, subscribers, s, f in rows if target == "nats"}
    gondola_json = {subscribers: s for target, subscribers, s, f in rows if target == "gondola-json"}
    for target, subscribers, saturated, fixed in rows:
        delivered = saturated["figures"]["delivered_per_second"]
        p99 = fixed["latencies"].get("delivery", {}).get("p99")
        reference = nats.get(subscribers)
        ratio_delivered = ratio_p99 = ratio_json = "–"
        if reference:
            ratio_delivered = f"{delivered / max(reference[0]['figures']['delivered_per_second'], 1e-9):.2f}"
            reference_p99 = reference[1]["latencies"].get("delivery", {}).get("p99")
            if p99 is not None and reference_p99:
                ratio_p99 = f"{p99 / reference_p99:.2f}"
        if target in ("gondola-protobuf", "gondola-json-deflate") and subscribers in gondola_json:
            ratio_json = f"{delivered / max(gondola_json[subscribers]['figures']['delivered_per_second'], 1e-9):.2f}"
        server = saturated.get("server")
        per_delivery = micros(cpu_per_delivery(saturated))
        fixed_cost, ratio_fixed_cost = cpu_per_delivery(fixed), "–"
        reference_fixed_cost = cpu_per_delivery(reference[1]) if reference else None
        if fixed_cost is not None and reference_fixed_cost:
            ratio_fixed_cost = f"{fixed_cost / reference_fixed_cost:.2f}"
        rss = (fixed.get("server") or {}).get("rssPerConnectionKiB")
        share = fixed["figures"].get("delivered_share", 0) * 100
        print(f"| {subscribers} | {target} | {delivered:.0f} | {ratio_delivered} | {ratio_json} | {cpu(server)} | {per_delivery} "
              f"| {'–' if p99 is None else f'{p99:.2f}'} | {ratio_p99} | {micros(fixed_cost)} | {ratio_fixed_cost} "
              f"| {share:.1f}% | {'–' if rss is None else f'{rss:.1f}'} | {errors(saturated) + errors(fixed)} |")


def cpu_per_delivery(report):
    """The server's CPU microseconds per delivered message in a run (None when unknown)."""
    server, delivered = report.get("server"), report["figures"]["delivered_per_second"]
    return server["cpuPercent"] / 100 / delivered * 1e6 if server and delivered > 0 else None


def micros(value):
    return "–" if value is None else f"{value:.2f}"


def engine_percent(path):
    """The engine's servers' CPU (PostgreSQL, Redis) in percent of one core, from FILE.engine."""
    try:
        before, after, seconds = (float(value) for value in open(path + ".engine").read().split())
    except (OSError, ValueError):
        return None
    return (after - before) / max(seconds, 1e-9) * 100


def nodes(report):
    return report["settings"].get("nodes", "1")


def combined_cpu(report, path):
    """The nodes' and the engine's CPU in percent of one core (None when unknown)."""
    server, engine = report.get("server"), engine_percent(path)
    if not server or engine is None:
        return None
    return server["cpuPercent"] + engine


def percent(value):
    return "–" if value is None else f"{value:.0f}%"


def cluster(arguments):
    for argument in arguments:
        path, _, engine = argument.partition("#")
        report = load(path)
        delivered = report["figures"]["delivered_per_second"]
        total = combined_cpu(report, path)
        per_delivery = f"{total / 100 / delivered * 1e6:.2f}" if total is not None and delivered > 0 else "–"
        print(f"| fan-out {report['settings']['subscribers']} | {engine} | {nodes(report)} | {report['connected']}/{report['connections']} | {delivered:.0f} "
              f"| {latency(report, 'delivery')} | {cpu(report.get('server'))} | {percent(engine_percent(path))} | {per_delivery} | {errors(report)} |")


def cluster_travellers(arguments):
    for argument in arguments:
        path, _, engine = argument.partition("#")
        report = load(path)
        count = int(report["settings"]["travellers"])
        total = combined_cpu(report, path)
        per_thousand = "–" if total is None else f"{total / count * 1000:.0f}%"
        print(f"| {count} | {engine} | {nodes(report)} | {report['connected']}/{report['connections']} "
              f"| {report['figures'].get('location_updates_per_second', 0):.0f} | {latency(report, 'location', 'p50')} | {latency(report, 'location')} "
              f"| {latency(report, 'chat')} | {cpu(report.get('server'))} | {percent(engine_percent(path))} | {per_thousand} | {errors(report)} |")


def cluster_bus(arguments):
    for argument in arguments:
        path, engine, channel = argument.split("#")
        report = load(path)
        published = report["figures"]["published_per_second"]
        total = combined_cpu(report, path)
        per_publication = f"{total / 100 / published * 1e6:.0f}" if total is not None and published > 0 else "–"
        nodes = report.get("server")
        nodes_per_publication = f"{nodes['cpuPercent'] / 100 / published * 1e6:.0f}" if nodes and published > 0 else "–"
        print(f"| {engine} | {channel} | {published:.0f} | {report['figures']['delivered_per_second']:.0f} | {latency(report, 'delivery')} "
              f"| {cpu(report.get('server'))} | {percent(engine_percent(path))} | {per_publication} | {nodes_per_publication} | {errors(report)} |")


def cluster_regions(arguments):
    for argument in arguments:
        base, engine, count = argument.split("#")
        reports = [load(f"{base}-{side}.json") for side in (0, 1)]
        travellers = sum(int(report["settings"]["travellers"]) for report in reports)
        nodes_cpu = sum(report["server"]["cpuPercent"] for report in reports if report.get("server"))
        engine_cpu = engine_percent(base)
        total = None if engine_cpu is None else nodes_cpu + engine_cpu
        per_thousand = "–" if total is None else f"{total / travellers * 1000:.0f}%"
        p99 = max(report["latencies"]["location"]["p99"] for report in reports if report["latencies"].get("location"))
        updates = sum(report["figures"].get("location_updates_per_second", 0) for report in reports)
        counts = []
        for node in range(1, int(count) + 1):
            outcomes = {}
            try:
                for line in open(f"{base}-node{node}.metrics"):
                    outcome = line.split('outcome="')[1].split('"')[0]
                    outcomes[outcome] = float(line.split()[-1])
            except OSError:
                pass
            counts.append(f"node {node}: {outcomes.get('applied', 0):.0f} / {outcomes.get('dropped', 0):.0f}")
        connected = sum(report["connected"] for report in reports)
        connections = sum(report["connections"] for report in reports)
        print(f"| {engine} | {count} | {connected}/{connections} | {updates:.0f} | {p99:.1f} | {nodes_cpu:.0f}% | {percent(engine_cpu)} "
              f"| {per_thousand} | {'; '.join(counts)} | {sum(errors(report) for report in reports)} |")


def bandwidth(paths):
    def options(report):
        settings = report["settings"]
        chosen = [name for name, on in (("deflate", settings.get("compression") == "true"), ("delta", settings.get("delta") == "true")) if on]
        return f"{settings['encoding']}" + (" + " + " + ".join(chosen) if chosen else "")

    def per_thousand(report):
        return report["server"]["cpuPercent"] / int(report["settings"]["travellers"]) * 1000

    def per_message(report):
        # Server CPU microseconds per message the clients received.
        return report["server"]["cpuPercent"] / 100 * 1e6 / max(report["messagesInPerSecond"], 1e-9)

    baseline = load(paths[0])
    base_wire = baseline["figures"]["wire_bytes_per_traveller_hour"]
    for path in paths:
        report = load(path)
        figures = report["figures"]
        wire = figures["wire_bytes_per_traveller_hour"]
        print(f"| {options(report)} | {wire / 1e6:.2f} | {wire / base_wire:.0%} | {figures['message_bytes_per_traveller_hour'] / 1e6:.2f} "
              f"| {figures.get('wire_bytes_per_host_hour', 0) / 1e6:.1f} | {report['messagesInPerSecond']:.0f} | {cpu(report.get('server'))} "
              f"| {per_thousand(report):.1f}% | {per_thousand(report) / per_thousand(baseline):.2f}× | {per_message(report):.1f} "
              f"| {rss_per_connection(report)} | {latency(report, 'location')} | {errors(report)} | {cpu(report.get('client'))} |")


def rss_per_connection(report):
    value = (report.get("server") or {}).get("rssPerConnectionKiB")
    return "–" if value is None else f"{value:.0f}"


def scale(arguments):
    def milliseconds(summary, field, digits):
        return "–" if not summary else f"{summary[field]:.{digits}f}"

    for argument in arguments:
        server_name, path, *rest = argument.split("#")
        report = load(path)
        figures = report["figures"]
        presence = load(rest[0]) if rest else None
        last = report["latencies"].get("last_delivery")
        print(f"| {server_name} | {report['connected']}/{report['connections']} | {figures.get('ready_per_second', 0):.0f} "
              f"| {rss_per_connection(report)} | {milliseconds(last, 'p50', 0)} | {milliseconds(last, 'max', 0)} "
              f"| {micros(cpu_per_delivery(report))} | {figures.get('delivered_share', 0) * 100:.1f}% "
              f"| {milliseconds(presence, 'p50_ms', 2)} | {milliseconds(presence, 'p99_ms', 2)} "
              f"| {milliseconds(presence, 'cpu_us_per_call', 0)} | {errors(report)} |")


def storm(arguments):
    for argument in arguments:
        _, signal, limit, base = argument.split("#")
        report, peaks = load(base + ".json"), load(base + ".peaks.json")
        figures = report["figures"]
        down = open(base + ".down").read().strip()
        seconds = (lambda field: "not reached" if figures[field] < 0 else f"{figures[field]:.1f}")
        # The outage's second: the first with connections lost; the storm's worst second after it.
        timeline = report["timeline"]
        start = next((index for index, sample in enumerate(timeline) if sample["errors"] > 0 and index > 0
                      and sample["connected"] < timeline[index - 1]["connected"]), None)
        worst = max((sample["p99"] for sample in timeline[start:start + 30]), default=None) if start is not None else None
        print(f"| {signal} | {'none' if limit == '0' else f'{int(limit):,}/s'} | {figures['clients_dropped']:.0f} | {down} "
              f"| {seconds('back_99_seconds')} | {seconds('back_100_seconds')} | {figures['told_recovered']:.0f} | {figures['told_not_recovered']:.0f} "
              f"| {figures['acknowledged_publications']:.0f} | {figures['missing_acknowledged']:.0f} | {figures['duplicate_deliveries']:.0f} "
              f"| {peaks['peak_cpu_percent']:.0f}% | {peaks['mean_cpu_percent']:.0f}% | {peaks['peak_rss_mib']:.0f} "
              f"| {latency(report, 'delivery')} | {'–' if worst is None else f'{worst:.0f}'} | {sum(report['connectionErrors'].values())} |")


if __name__ == "__main__":
    {"travellers": travellers, "chat": chat, "peers": peers, "cluster": cluster, "cluster-travellers": cluster_travellers,
     "cluster-bus": cluster_bus, "cluster-regions": cluster_regions, "bandwidth": bandwidth, "scale": scale,
     "storm": storm}[sys.argv[1]](sys.argv[2:])
