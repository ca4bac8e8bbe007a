"""Validates Prometheus text exposition format 0.0.4 read from stdin, and the naming
practices spotpool follows, then prints the samples as "name{labels} value" lines for
tests to grep. Exits 1 on the first problem, naming the line or the family.

Format: HELP and TYPE at most once per family, before its samples, and TYPE one of
the known types; every sample belongs to a family with a TYPE, and a family's lines
are all together; metric and label names well formed; label values quoted and
escaped, no label twice; values parse as floats; no series twice.  Histograms: only
_bucket, _sum and _count samples; buckets cumulative in increasing le and ending in
le="+Inf", which equals _count.

Naming (https://prometheus.io/docs/practices/naming/): every name starts with
spotpool_ (or is one of the standard process_* families); counters, and only counters, end in _total; histograms (durations here)
end in _seconds; no unit other than a base unit appears in a name.

--self-test checks that pages breaking each rule are rejected."""
import contextlib
import io
import math
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SAMPLE = re.compile(rf"^({NAME})(\{{(.*)\}})?\s+(\S+)(\s+-?\d+)?$")
LABEL = re.compile(rf'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"\s*(,|$)')
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}
PREFIX = "spotpool_"
# The process_* families every Prometheus client library exports, under their own names.
PROCESS_FAMILIES = {
    "process_cpu_seconds_total", "process_open_fds", "process_max_fds",
    "process_virtual_memory_bytes", "process_resident_memory_bytes",
    "process_start_time_seconds",
}
NON_BASE_UNITS = re.compile(
    r"_(milli|micro|nano)?(seconds?|secs?|ms|us|ns|minutes?|hours?|days?|"
    r"bits|kilobytes|megabytes|gigabytes|kb|mb|gb|percent|celsius)(_|$)")


class Bad(Exception):
    pass


def parse_labels(text):
    labels, pos = {}, 0
    while pos < len(text):
        m = LABEL.match(text, pos)
        if not m:
            raise Bad(f"bad labels: {text!r}")
        if m.group(1) in labels:
            raise Bad(f"label {m.group(1)} twice")
        labels[m.group(1)] = m.group(2)
        pos = m.end()
    return labels


def check_name(family, kind):
    if not family.startswith(PREFIX) and family not in PROCESS_FAMILIES:
        raise Bad(f"{family}: no {PREFIX} prefix")
    if (kind == "counter") != family.endswith("_total"):
        raise Bad(f"{family}: a {kind}" + (" must end in _total" if kind == "counter"
                                           else " must not end in _total"))
    if kind == "histogram" and not family.endswith("_seconds"):
        raise Bad(f"{family}: a duration histogram must end in _seconds")
    stem = re.sub(r"(_seconds|_bytes)?(_total)?$", "", family)
    if NON_BASE_UNITS.search(stem):
        raise Bad(f"{family}: use base units (_seconds, _bytes), once, at the end")


def family_of(name, types):
    """The declared family a sample name belongs to."""
    if types.get(name) not in (None, "histogram", "summary"):
        return name
    m = re.match(r"^(.*)_(bucket|sum|count)$", name)
    if m and types.get(m.group(1)) in ("histogram", "summary"):
        return m.group(1)
    raise Bad(f"sample {name} has no TYPE")


def check(lines):
    help_seen, types, sampled, done = set(), {}, set(), set()
    series, buckets, counts = set(), {}, {}
    current = None

    def enter(family):
        nonlocal current
        if family != current:
            if family in done:
                raise Bad(f"{family}: its lines are not all together")
            if current:
                done.add(current)
            current = family

    for lineno, line in enumerate(lines, 1):
        try:
            if not line.strip():
                continue
            if line.startswith("#"):
                parts = line.split(None, 3)
                if len(parts) < 3 or parts[1] not in ("HELP", "TYPE"):
                    continue
                family = parts[2]
                enter(family)
                if family in sampled:
                    raise Bad(f"{parts[1]} after samples of {family}")
                if parts[1] == "HELP":
                    if family in help_seen:
                        raise Bad(f"second HELP for {family}")
                    help_seen.add(family)
                    continue
                if family in types:
                    raise Bad(f"second TYPE for {family}")
                kind = parts[3].strip() if len(parts) > 3 else ""
                if kind not in TYPES:
                    raise Bad(f"unknown type {kind!r}")
                check_name(family, kind)
                types[family] = kind
                continue
            m = SAMPLE.match(line)
            if not m:
                raise Bad(f"not a sample: {line!r}")
            name, labels = m.group(1), parse_labels(m.group(3) or "")
            try:
                value = float(m.group(4))
            except ValueError:
                raise Bad(f"bad value {m.group(4)!r}") from None
            family = family_of(name, types)
            enter(family)
            sampled.add(family)
            key = (name, tuple(sorted(labels.items())))
            if key in series:
                raise Bad(f"series twice: {line!r}")
            series.add(key)
            kind = types[family]
            if kind == "counter" and not value >= 0:
                raise Bad(f"counter below zero: {line!r}")
            if kind == "histogram":
                rest = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
                if name.endswith("_bucket"):
                    if "le" not in labels:
                        raise Bad(f"bucket without le: {line!r}")
                    buckets.setdefault((family, rest), []).append((labels["le"], value))
                elif name.endswith("_count"):
                    counts[(family, rest)] = value
            print(line)
        except Bad as e:
            sys.exit(f"line {lineno}: {e}")
    for (family, rest), got in buckets.items():
        try:
            les = [math.inf if le == "+Inf" else float(le) for le, _ in got]
        except ValueError:
            sys.exit(f"{family}{dict(rest)}: bad le")
        values = [v for _, v in got]
        if les != sorted(set(les)) or values != sorted(values) or got[-1][0] != "+Inf":
            sys.exit(f"{family}{dict(rest)}: buckets not cumulative in increasing le or no +Inf")
        if counts.get((family, rest)) != values[-1]:
            sys.exit(f"{family}{dict(rest)}: le=\"+Inf\" bucket differs from _count")


BAD_PAGES = [
    "# TYPE spotpool_launches counter\nspotpool_launches 1\n",
    "# TYPE spotpool_x_total gauge\nspotpool_x_total 1\n",
    "# TYPE spotpool_call_duration_milliseconds histogram\n",
    "# TYPE spotpool_call_latency_ms gauge\n",
    "# TYPE launches_total counter\nlaunches_total 1\n",
    "# TYPE spotpool_a nonsense\n",
    "# TYPE spotpool_a gauge\nspotpool_a 1\nspotpool_a 2\n",
    "# TYPE spotpool_a gauge\nspotpool_a{x=\"1\",x=\"2\"} 1\n",
    "# TYPE spotpool_a gauge\nspotpool_a{x=\"a\"b\"} 1\n",
    "# TYPE spotpool_a gauge\nspotpool_a one\n",
    "spotpool_untyped 1\n",
    "# TYPE spotpool_a gauge\n# TYPE spotpool_a gauge\n",
    "# HELP spotpool_a x\n# HELP spotpool_a y\n# TYPE spotpool_a gauge\n",
    "# TYPE spotpool_a gauge\nspotpool_a 1\n# HELP spotpool_a late\n",
    "# TYPE spotpool_a gauge\n# TYPE spotpool_b gauge\nspotpool_a 1\n",
    "# TYPE spotpool_c_total counter\nspotpool_c_total -1\n",
    "# TYPE spotpool_d_seconds histogram\nspotpool_d_seconds_bucket{le=\"1\"} 2\n"
    "spotpool_d_seconds_bucket{le=\"+Inf\"} 2\nspotpool_d_seconds_count 3\n",
    "# TYPE spotpool_d_seconds histogram\nspotpool_d_seconds_bucket{le=\"1\"} 2\n"
    "spotpool_d_seconds_bucket{le=\"+Inf\"} 1\nspotpool_d_seconds_count 1\n",
    "# TYPE spotpool_d_seconds histogram\nspotpool_d_seconds_bucket{le=\"1\"} 2\n",
    "# TYPE spotpool_d_seconds histogram\nspotpool_d_seconds_bucket 2\n",
]
GOOD_PAGE = """# HELP spotpool_d_seconds A duration.
# TYPE spotpool_d_seconds histogram
spotpool_d_seconds_bucket{a="x\\"y",le="0.5"} 1
spotpool_d_seconds_bucket{a="x\\"y",le="+Inf"} 2
spotpool_d_seconds_sum{a="x\\"y"} 3.5
spotpool_d_seconds_count{a="x\\"y"} 2
# TYPE spotpool_cpu_seconds_total counter
spotpool_cpu_seconds_total 4
# TYPE spotpool_pool_minimum gauge
spotpool_pool_minimum{pool="a"} -1
"""


def rejects(page):
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            check(page.splitlines())
        except SystemExit as e:
            return e.code not in (None, 0)
    return False


def self_test():
    failed = [p for p in BAD_PAGES if not rejects(p)]
    if rejects(GOOD_PAGE):
        failed.append(GOOD_PAGE)
    for p in failed:
        print(f"wrongly {'rejected' if p is GOOD_PAGE else 'accepted'}:\n{p}")
    n = len(BAD_PAGES) + 1
    print(f"promcheck self-test: {n - len(failed)} passed, {len(failed)} failed")
    sys.exit(1 if failed else 0)


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    check(sys.stdin.read().splitlines())


if __name__ == "__main__":
    main()
