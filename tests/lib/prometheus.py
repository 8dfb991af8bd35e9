"""Parses Prometheus text exposition (format 0.0.4) strictly, for the server tests.

parse(text) -> {(name, frozenset(labels.items())): value}; raises AssertionError on a line that is
not a comment or `name{labels} value`, a sample of a family without # TYPE, a counter not ending
in _total, or a histogram whose buckets are not cumulative, lack le="+Inf", or whose +Inf bucket
differs from its _count.
"""
import re

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)')


def labels_of(text):
    out, pos = {}, 0
    while pos < len(text):
        m = LABEL.match(text, pos)
        assert m, f"bad labels {text!r}"
        out[m.group(1)] = m.group(2)
        pos = m.end()
    return out


def parse(text):
    assert text.endswith("\n"), "no newline at the end"
    types, samples, hist = {}, {}, {}
    for line in text.split("\n")[:-1]:
        if line.startswith("# HELP "):
            assert len(line.split(" ", 3)) == 4, f"HELP without text: {line!r}"
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert kind in ("counter", "gauge", "histogram"), line
            assert name not in types, f"TYPE twice: {name}"
            if kind == "counter":
                assert name.endswith("_total"), f"counter {name} does not end in _total"
            types[name] = kind
            continue
        m = SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        name, labels, value = m.group(1), labels_of(m.group(2) or ""), float(m.group(3))
        family = re.sub(r'_(bucket|sum|count)$', '', name) if name not in types else name
        assert family in types, f"sample {name} before its # TYPE"
        if types[family] == "histogram":
            h = hist.setdefault(family, {"buckets": []})
            if name.endswith("_bucket"):
                h["buckets"].append((labels["le"], value))
            else:
                h[name[len(family) + 1:]] = value
        key = (name, frozenset(labels.items()))
        assert key not in samples, f"sample twice: {line!r}"
        samples[key] = value
    for family, h in hist.items():
        les = [le for le, _ in h["buckets"]]
        assert les and les[-1] == "+Inf", f"{family}: last bucket is not +Inf: {les}"
        bounds = [float(le) for le in les[:-1]]
        assert bounds == sorted(bounds), f"{family}: bounds out of order"
        counts = [v for _, v in h["buckets"]]
        assert counts == sorted(counts), f"{family}: buckets not cumulative: {counts}"
        assert counts[-1] == h.get("count"), f"{family}: +Inf {counts[-1]} != _count {h.get('count')}"
        assert "sum" in h, f"{family}: no _sum"
    return samples


def get(samples, name, **labels):
    """The value of one sample (0 when absent: a counter not yet incremented)."""
    return samples.get((name, frozenset(labels.items())), 0)
