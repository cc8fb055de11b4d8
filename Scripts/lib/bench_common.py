"""What the Python benchmark drivers share: connection tokens signed with the hub's secret, and a
process's CPU time and /proc status fields."""
import base64
import hashlib
import hmac
import json
import os
import time


def token(secret, user):
    """An HS256 connection token for `user`, valid for an hour."""
    def part(value):
        return base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).rstrip(b"=")
    signing = part({"alg": "HS256", "typ": "JWT"}) + b"." + part({"sub": user, "exp": int(time.time()) + 3600})
    signature = base64.urlsafe_b64encode(hmac.new(secret.encode(), signing, hashlib.sha256).digest()).rstrip(b"=")
    return (signing + b"." + signature).decode()


def cpu_seconds(pid):
    """User and system CPU seconds of process `pid` so far."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status_kib(pid, field):
    """A field of /proc/PID/status counted in kB (VmRSS, RssAnon …), or a count (Threads); 0 when absent."""
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0
