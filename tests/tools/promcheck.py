"""Validates Prometheus text exposition format 0.0.4 read from stdin and prints the
samples as "name{labels} value" lines for tests to grep. Exits 1 on the first
malformed line, naming it.

Checks: HELP/TYPE at most once per family and before its samples; metric and label
names well formed; label values properly quoted and escaped; values parse as floats;
histogram buckets cumulative and ending in le="+Inf" equal to _count."""
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SAMPLE = re.compile(rf"^({NAME})(\{{(.*)\}})?\s+(\S+)(\s+-?\d+)?$")
LABEL = re.compile(rf'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"\s*(,|$)')


def parse_labels(text, lineno):
    labels, pos = {}, 0
    while pos < len(text):
        m = LABEL.match(text, pos)
        if not m:
            sys.exit(f"line {lineno}: bad labels: {text!r}")
        labels[m.group(1)] = m.group(2)
        pos = m.end()
    return labels


def main():
    seen_help, seen_type, types, sampled = set(), set(), {}, set()
    buckets = {}
    for lineno, line in enumerate(sys.stdin.read().splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                seen = seen_help if parts[1] == "HELP" else seen_type
                if parts[2] in seen:
                    sys.exit(f"line {lineno}: second {parts[1]} for {parts[2]}")
                if parts[2] in sampled:
                    sys.exit(f"line {lineno}: {parts[1]} after samples of {parts[2]}")
                seen.add(parts[2])
                if parts[1] == "TYPE":
                    types[parts[2]] = parts[3]
            continue
        m = SAMPLE.match(line)
        if not m:
            sys.exit(f"line {lineno}: not a sample: {line!r}")
        name, labels = m.group(1), parse_labels(m.group(3) or "", lineno)
        try:
            value = float(m.group(4))
        except ValueError:
            sys.exit(f"line {lineno}: bad value {m.group(4)!r}")
        family = re.sub(r"_(bucket|sum|count|total)$", "", name)
        sampled.update({name, family})
        if name.endswith("_bucket"):
            key = (family, tuple(sorted((k, v) for k, v in labels.items() if k != "le")))
            buckets.setdefault(key, []).append((labels.get("le"), value))
        print(line)
    for (family, _), series in buckets.items():
        values = [v for _, v in series]
        if values != sorted(values) or series[-1][0] != "+Inf":
            sys.exit(f"{family}: buckets not cumulative or missing +Inf")


if __name__ == "__main__":
    main()
