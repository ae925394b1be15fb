#!/usr/bin/env python3
"""Fits other kinds of model on the samples `ratewarden train --samples-out` writes, and judges
them as the model card judges the shipped one: leave-one-archetype-out, and on other traffic.

    compare.py TRAIN.jsonl [FRESH.jsonl ...] [--actors OUTSIDE.jsonl ...]

TRAIN's samples are fitted on (leave-one-archetype-out needs its `archetype`s). Each kind of
model is fitted once on TRAIN and scores every other file: FRESH files by archetype, legitimate
subjects flagged and abuse recall averaged over the abusive archetypes; files after --actors by
actor (their `archetype` names an actor, which may be many subjects: as-training-data.py writes
such traffic from scripts/outside-traffic's generators), legitimate actors flagged and abusive
actors caught, as the judge counts them.

Every score goes through the daemon's evidence rule (the model's logit bounded at +-8 and pulled
towards the training share of abuse by n / (n + 30)); the daemon's clamp to the training range
and its novelty rule are not applied. A subject counts as flagged at a threshold once its
highest score reaches it. Needs numpy and scikit-learn.
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


def linear():
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))


KINDS = ["auth_failure_ratio", "not_found_ratio", "other_client_error_ratio"]

# name: (features, a new unfitted model)
MODELS = {
    "linear, the shipped features (as train fits, without Platt)": (SHIPPED, linear),
    "linear, the shipped features and endpoints_per_request":
        (SHIPPED + ["endpoints_per_request"], linear),
    "linear, the shipped features with the error kinds apart":
        ([f for f in SHIPPED if f != "client_error_ratio"] + KINDS, linear),
    "linear, the shipped features without interarrival_cv":
        ([f for f in SHIPPED if f != "interarrival_cv"], linear),
    "linear, the shipped features and denied_ratio": (SHIPPED + ["denied_ratio"], linear),
    "linear, the shipped features and ips_per_request": (SHIPPED + ["ips_per_request"], linear),
    "trees (200 rounds of 8 leaves), all eleven features": (FEATURES, trees()),
    "trees, the shipped features": (SHIPPED, trees()),
    "trees, the shipped features, monotone (more errors, demand or spread, or steadier: never lower)":
        (SHIPPED, trees(monotonic_cst=[-1, 1, 1, 1])),
}


def load(path):
    with open(path) as lines:
        rows = [json.loads(line) for line in lines]
    if not rows:
        sys.exit(f"{path}: no samples")
    if any("label" not in r for r in rows):
        sys.exit(f"{path}: some samples have no label; compare.py needs labelled traffic")
    return {
        "path": path,
        "subject": np.array([r["subject"] for r in rows]),
        "archetype": np.array([r["archetype"] or "" for r in rows]),
        "abuse": np.array([r["label"] == "abuse" for r in rows]),
        "requests": np.array([r["requests"] for r in rows], dtype=float),
        "x": np.array([[np.log1p(r[f]) if f in LOG1P else r[f] for f in FEATURES] for r in rows]),
    }


def columns(names):
    return [FEATURES.index(n) for n in names]


def fit(data, rows, names, make, rng):
    if len(rows) > FIT_AT_MOST:
        rows = rng.choice(rows, FIT_AT_MOST, replace=False)
    if data["abuse"][rows].all() or not data["abuse"][rows].any():
        sys.exit(f"{data['path']}: a fit needs both abusive and normal samples")
    model = make().fit(data["x"][rows][:, columns(names)], data["abuse"][rows])
    share = np.clip(data["abuse"][rows].mean(), 1e-3, 0.5)  # as the daemon bounds its prior
    return model, np.log(share / (1 - share))


def scores(fitted, data, rows, names):
    model, prior = fitted
    p = np.clip(model.predict_proba(data["x"][rows][:, columns(names)])[:, 1], 1e-12, 1 - 1e-12)
    logit = np.clip(np.log(p / (1 - p)), -8, 8)
    weight = data["requests"][rows] / (data["requests"][rows] + 30)
    return 1 / (1 + np.exp(-(prior + weight * (logit - prior))))


def highest(keys, abuse, score):
    """Each key's highest score and label (a key is a subject or an actor: abusive if any of
    its samples is)."""
    best, abusive = {}, {}
    for key, bad, value in zip(keys, abuse, score):
        best[key] = max(value, best.get(key, 0.0))
        abusive[key] = abusive.get(key, False) or bool(bad)
    return [(abusive[k], v) for k, v in best.items()]


def tally(by_archetype):
    """Legitimate subjects flagged, and abuse recall averaged over the archetypes with abuse,
    at each threshold; `by_archetype` holds each archetype's (abusive, highest score) pairs."""
    parts = []
    for t in THRESHOLDS:
        legit = sum(v >= t for pairs in by_archetype.values() for bad, v in pairs if not bad)
        recalls = [np.mean([v >= t for bad, v in pairs if bad])
                   for pairs in by_archetype.values() if any(bad for bad, _ in pairs)]
        recall = f"{np.mean(recalls):.3f}" if recalls else "none (no abuse)"
        parts.append(f"{t}: {legit} legitimate flagged, abuse recall {recall}")
    return "   ".join(parts)


def frontier(by_archetype):
    """How far the goals are at any threshold: the best abuse recall with no legitimate subject
    flagged, and the fewest legitimate subjects flagged for a recall of 0.9."""
    legit = np.array([v for pairs in by_archetype.values() for bad, v in pairs if not bad])
    abusive = [np.array([v for bad, v in pairs if bad])
               for pairs in by_archetype.values() if any(bad for bad, _ in pairs)]
    if not abusive:
        return "no abuse held out"
    points = [(int((legit >= t).sum()), np.mean([(s >= t).mean() for s in abusive]))
              for t in np.unique(np.concatenate([legit, *abusive]))]
    best = max((recall for flagged, recall in points if flagged == 0), default=0.0)
    fewest = min((flagged for flagged, recall in points if recall >= 0.9), default=None)
    return (f"best abuse recall with 0 legitimate flagged {best:.3f}; "
            f"fewest legitimate flagged for recall 0.9: {fewest}")


def by_archetype(data, rows, score):
    out = {}
    for archetype in sorted(set(data["archetype"][rows])):
        mine = data["archetype"][rows] == archetype
        out[archetype] = highest(data["subject"][rows][mine], data["abuse"][rows][mine], score[mine])
    return out


def leave_one_archetype_out(data, names, make, rng):
    result = {}
    for archetype in sorted(set(data["archetype"])):
        held = np.where(data["archetype"] == archetype)[0]
        fitted = fit(data, np.where(data["archetype"] != archetype)[0], names, make, rng)
        result.update(by_archetype(data, held, scores(fitted, data, held, names)))
    return result


def by_actor(fitted, data, names):
    rows = np.arange(len(data["abuse"]))
    pairs = highest(data["archetype"], data["abuse"], scores(fitted, data, rows, names))
    legit = [v for bad, v in pairs if not bad]
    abuse = [v for bad, v in pairs if bad]
    return "   ".join(
        f"{t}: {sum(v >= t for v in legit)} of {len(legit)} legitimate actors flagged, "
        f"{sum(v >= t for v in abuse)} of {len(abuse)} abusive caught" for t in THRESHOLDS)


def arguments(argv):
    if len(argv) < 2 or argv[1] == "--actors" or argv.count("--actors") > 1:
        sys.exit(__doc__)
    split = argv.index("--actors") if "--actors" in argv else len(argv)
    if split == len(argv) - 1:
        sys.exit("--actors names no file\n" + __doc__)
    return argv[1], argv[2:split], argv[split + 1:]


def main(argv):
    train_path, fresh_paths, actor_paths = arguments(argv)
    train = load(train_path)
    fresh = [load(path) for path in fresh_paths]
    outside = [load(path) for path in actor_paths]
    with_archetypes = (train["archetype"] != "").all()
    if not with_archetypes:
        print(f"{train_path} has samples without an archetype: leave-one-archetype-out is skipped")
    for name, (names, make) in MODELS.items():
        rng = np.random.default_rng(1)
        print(name)
        if with_archetypes:
            held_out = leave_one_archetype_out(train, names, make, rng)
            print("  leave one archetype out:", tally(held_out))
            print("    at any threshold:", frontier(held_out))
            print("    at 0.8, per archetype:", ", ".join(
                f"{a} {sum(v >= 0.8 for _, v in pairs)}/{len(pairs)}" for a, pairs in held_out.items()))
        fitted = fit(train, np.arange(len(train["abuse"])), names, make, rng)
        for data in fresh:
            rows = np.arange(len(data["abuse"]))
            print(f"  fitted on {train_path}, scored on {data['path']}:",
                  tally(by_archetype(data, rows, scores(fitted, data, rows, names))))
        for data in outside:
            print(f"  fitted on {train_path}, scored on {data['path']} by actor:",
                  by_actor(fitted, data, names))


if __name__ == "__main__":
    main(sys.argv)
