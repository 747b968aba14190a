"""What a fleet's diagnoses add up to: which failures dominate, what they cost, which hosts start them
more often than chance, and which failures nobody has a signature for yet.

A host "starts failures more often than chance" when, of the failures whose initiating host is known,
it initiated more than its share of the jobs it ran would predict: a one-sided binomial test, with a
Bonferroni correction over the hosts tested (the family-wise error stays at ALPHA).
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from trainmedic.util.text import md_inline

ALPHA = 0.01
TOP = 15


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed in log space (stable for thousands of trials)."""
    if k <= 0:
        return 1.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    lp, lq = math.log(p), math.log1p(-p)
    terms = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq
             for i in range(k, n + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    failed = [r for r in rows if r["verdict"] in ("failure", "hang")]
    by_cause = Counter(r["primary_id"] or "unknown" for r in failed)
    hours: defaultdict[str, float] = defaultdict(float)
    for r in failed:
        if r.get("gpu_hours"):
            hours[r["primary_id"] or "unknown"] += float(r["gpu_hours"])
    # hosts: how many jobs each ran, how many failures each initiated, with which causes
    ran: Counter[str] = Counter()
    for r in rows:
        for h in filter(None, (r.get("hosts") or "").split(",")):
            ran[h] += 1
    slots = sum(ran.values())
    started = [r for r in failed if r.get("host")]
    initiated: defaultdict[str, Counter[str]] = defaultdict(Counter)
    gpus: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for r in started:
        initiated[r["host"]][r["primary_id"] or "unknown"] += 1
        if r.get("gpu"):
            gpus[r["host"]][r["gpu"]] += 1
    tested = [h for h in initiated if ran.get(h)]
    hosts: list[dict[str, Any]] = []
    for h in tested:
        k, share = sum(initiated[h].values()), ran[h] / slots
        p_value = min(1.0, binomial_tail(k, len(started), share) * max(1, len(tested)))
        hosts.append({"host": h, "initiated": k, "of_failures": len(started), "jobs": ran[h],
                      "expected": round(share * len(started), 2), "p_value": p_value,
                      "significant": p_value < ALPHA, "causes": dict(initiated[h].most_common()),
                      "gpus": dict(gpus[h].most_common())})
    hosts.sort(key=lambda x: (x["p_value"], -x["initiated"]))
    templates = Counter(r["template"] for r in failed if r.get("template"))
    # over time: failures per ISO week of the failure (or, without a time in the logs, of the scan)
    weeks: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for r in failed:
        when = (dt.datetime.fromtimestamp(r["failed"], dt.timezone.utc) if r.get("failed")
                else r.get("scanned"))
        if isinstance(when, dt.datetime):
            year, week, _ = when.isocalendar()
            weeks[f"{year}-W{week:02d}"][r["primary_id"] or "unknown"] += 1
    return {
        "schema": "trainmedic.fleet/v1",
        "jobs": len(rows),
        "failed": len(failed),
        "healthy": sum(1 for r in rows if r["verdict"] == "healthy"),
        "unreadable": sum(1 for r in rows if r["verdict"] == "unreadable"),
        "causes": [{"id": c, "jobs": n, "gpu_hours": round(hours.get(c, 0.0), 2)} for c, n in by_cause.most_common()],
        "gpu_hours_lost": round(sum(hours.values()), 2),
        "hosts": hosts,
        "unclassified": [{"template": t, "jobs": n} for t, n in templates.most_common(TOP)],
        "weeks": [{"week": w, "failed": sum(c.values()), "causes": dict(c.most_common())}
                  for w, c in sorted(weeks.items())],
    }


def markdown(s: dict[str, Any]) -> str:
    out = [f"## trainmedic fleet: {s['failed']} of {s['jobs']} jobs failed or hung", ""]
    if s["unreadable"]:
        out += [f"{s['unreadable']} job(s) could not be read (see `trainmedic fleet report --format json`).", ""]
    out += ["### Failures by cause", "", "| cause | jobs | GPU hours lost |", "|---|---|---|"]
    out += [f"| `{c['id']}` | {c['jobs']} | {c['gpu_hours']:g} |" for c in s["causes"][:TOP]]
    out += ["", f"GPU hours lost in all (jobs whose logs give the size and the times): {s['gpu_hours_lost']:g}", ""]
    if len(s["weeks"]) > 1:
        top = [c["id"] for c in s["causes"][:4]]
        out += ["### Over time", "", "| week | failed | " + " | ".join(f"`{c}`" for c in top) + " |",
                "|---|---|" + "---|" * len(top)]
        out += [f"| {w['week']} | {w['failed']} | " + " | ".join(str(w["causes"].get(c, 0)) for c in top) + " |"
                for w in s["weeks"][-12:]]
        out.append("")
    flagged = [h for h in s["hosts"] if h["significant"]]
    out += ["### Hosts that start failures more often than chance", ""]
    if not flagged:
        out += [f"None at p < {ALPHA} (binomial test, Bonferroni over {len(s['hosts'])} hosts).", ""]
    for h in flagged:
        causes = ", ".join(f"{c} ×{n}" for c, n in h["causes"].items())
        on = ", ".join(f"{md_inline(g)} ×{n}" for g, n in h["gpus"].items())
        out.append(f"- **{md_inline(h['host'])}** started {h['initiated']} of {h['of_failures']} failures "
                   f"(it ran {h['jobs']} jobs: {h['expected']:g} expected; p = {h['p_value']:.2g}): {causes}"
                   + (f"; on {on}" if on else ""))
    if s["unclassified"]:
        out += ["", "### Failures no signature knows, by template (write these entries first)", ""]
        out += [f"- {u['jobs']} × {md_inline(u['template'])}" for u in s["unclassified"]]
    return "\n".join(out) + "\n"
