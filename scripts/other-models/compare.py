#!/usr/bin/env python3
"""Fits other kinds of model on the samples `ratewarden train --samples-out` writes, and judges
them as the model card judges the shipped one: leave-one-archetype-out, and on fresh seeds.

    compare.py SEED1.jsonl [FRESH.jsonl ...] [--actors OUTSIDE.jsonl ...]

Files after --actors hold samples of traffic whose `archetype` names an actor (an actor may be
many subjects: as-training-data.py writes such traffic from scripts/outside-traffic's
generators): they are counted by actor, as the judge counts them, legitimate actors flagged /
abusive actors caught. Needs numpy and scikit-learn. Every score goes through the daemon's evidence rule (the model's
logit bounded at +-8 and pulled towards the prior by n / (n + 30)), so thresholds mean what they
mean in the daemon. A subject counts as flagged at a threshold once its highest score reaches it.
"""
import json
import sys

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

FEATURES = ["limit_usage", "denied_ratio", "endpoints_per_request", "ips_per_request",
            "auth_failure_ratio", "not_found_ratio", "other_client_error_ratio",
            "interarrival_cv", "client_error_ratio", "address_spread", "limit_demand"]
LOG1P = {"interarrival_cv", "limit_demand"}
SHIPPED = ["interarrival_cv", "client_error_ratio", "address_spread", "limit_demand"]
THRESHOLDS = (0.5, 0.8, 0.95)
FIT_AT_MOST = 100_000  # samples per fit, drawn at random (train fits on 20,000)


def trees(**extra):
    return lambda: HistGradientBoostingClassifier(max_iter=200, max_leaf_nodes=8, random_state=0, **extra)


# name: (features, a new unfitted model)
MODELS = {
    "linear, the shipped features (as train fits, without Platt)":
        (SHIPPED, lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))),
    "trees, all eleven features": (FEATURES, trees()),
    "trees, the shipped features": (SHIPPED, trees()),
    "trees, the shipped features, monotone (more errors, demand or spread, or steadier: never lower)":
        (SHIPPED, trees(monotonic_cst=[-1, 1, 1, 1])),
}


def load(path):
    rows = [json.loads(line) for line in open(path)]
    if any("label" not in r for r in rows):
        sys.exit(f"{path}: some samples have no label; compare.py needs labelled traffic")
    x = np.array([[np.log1p(r[f]) if f in LOG1P else r[f] for f in FEATURES] for r in rows])
    return {
        "subject": np.array([r["subject"] for r in rows]),
        "archetype": np.array([r["archetype"] or "-" for r in rows]),
        "abuse": np.array([r["label"] == "abuse" for r in rows]),
        "requests": np.array([r["requests"] for r in rows], dtype=float),
        "x": x,
    }


def columns(names):
    return [FEATURES.index(n) for n in names]


def fit(data, rows, names, make, rng):
    if len(rows) > FIT_AT_MOST:
        rows = rng.choice(rows, FIT_AT_MOST, replace=False)
    model = make().fit(data["x"][rows][:, columns(names)], data["abuse"][rows])
    share = data["abuse"][rows].mean()
    return model, np.log(share / (1 - share))


def scores(model, prior, data, rows, names):
    p = np.clip(model.predict_proba(data["x"][rows][:, columns(names)])[:, 1], 1e-12, 1 - 1e-12)
    logit = np.clip(np.log(p / (1 - p)), -8, 8)
    weight = data["requests"][rows] / (data["requests"][rows] + 30)
    return 1 / (1 + np.exp(-(prior + weight * (logit - prior))))


def highest_by_subject(data, rows, score):
    best = {}
    for subject, value in zip(data["subject"][rows], score):
        best[subject] = max(value, best.get(subject, 0.0))
    return np.array(list(best.values()))


def line(counts):
    legit = {t: sum(c[t] for a, abuse, n, c in counts if not abuse) for t in THRESHOLDS}
    recall = {t: np.mean([c[t] / n for a, abuse, n, c in counts if abuse]) for t in THRESHOLDS}
    return "   ".join(f"{t}: {legit[t]} legitimate flagged, abuse recall {recall[t]:.3f}" for t in THRESHOLDS)


def count(highest):
    return {t: int((highest >= t).sum()) for t in THRESHOLDS}


def leave_one_archetype_out(data, names, make, rng):
    counts = []
    for archetype in sorted(set(data["archetype"])):
        held = np.where(data["archetype"] == archetype)[0]
        model, prior = fit(data, np.where(data["archetype"] != archetype)[0], names, make, rng)
        highest = highest_by_subject(data, held, scores(model, prior, data, held, names))
        counts.append((archetype, bool(data["abuse"][held[0]]), len(highest), count(highest)))
    return counts


def fresh(train, other, names, make, rng):
    model, prior = fit(train, np.arange(len(train["abuse"])), names, make, rng)
    counts = []
    for archetype in sorted(set(other["archetype"])):
        rows = np.where(other["archetype"] == archetype)[0]
        highest = highest_by_subject(other, rows, scores(model, prior, other, rows, names))
        counts.append((archetype, bool(other["abuse"][rows[0]]), len(highest), count(highest)))
    return counts


def by_actor(train, other, names, make, rng):
    model, prior = fit(train, np.arange(len(train["abuse"])), names, make, rng)
    rows = np.arange(len(other["abuse"]))
    score = scores(model, prior, other, rows, names)
    highest, abusive = {}, {}
    for actor, abuse, value in zip(other["archetype"], other["abuse"], score):
        highest[actor] = max(value, highest.get(actor, 0.0))
        abusive[actor] = abuse
    legit = [v for a, v in highest.items() if not abusive[a]]
    abuse = [v for a, v in highest.items() if abusive[a]]
    return "   ".join(
        f"{t}: {sum(v >= t for v in legit)} of {len(legit)} legitimate actors flagged, "
        f"{sum(v >= t for v in abuse)} of {len(abuse)} abusive caught" for t in THRESHOLDS)


def main(argv):
    if len(argv) < 2 or argv[1] == "--actors":
        sys.exit(__doc__)
    split = argv.index("--actors") if "--actors" in argv else len(argv)
    train = load(argv[1])
    others = [(path, load(path)) for path in argv[2:split]]
    outside = [(path, load(path)) for path in argv[split + 1:]]
    for name, (names, make) in MODELS.items():
        rng = np.random.default_rng(1)
        print(name)
        held_out = leave_one_archetype_out(train, names, make, rng)
        print("  leave one archetype out:", line(held_out))
        print("    at 0.8, per archetype:", ", ".join(
            f"{a} {c[0.8]}/{n}" for a, abuse, n, c in held_out))
        for path, other in others:
            print(f"  fitted on {argv[1]}, scored on {path}:", line(fresh(train, other, names, make, rng)))
        for path, other in outside:
            print(f"  fitted on {argv[1]}, scored on {path} by actor:", by_actor(train, other, names, make, rng))


if __name__ == "__main__":
    main(sys.argv)
