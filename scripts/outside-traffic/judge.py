#!/usr/bin/env python3
"""Helpers of scripts/outside-traffic/judge.

  judge.py strip LABELLED.jsonl OUT.jsonl
      the replay input: same lines in the same order, label legit->normal, actor dropped
  judge.py policy POLICY MODEL THRESHOLD OUT.yaml
      a copy of POLICY with adaptive.anomaly.model = abs(MODEL) and adaptive.anomaly.threshold =
      THRESHOLD; relative envoy_config / store.tls_ca made absolute; everything else unchanged
      (comments and formatting kept: the file is edited as text, then checked to be equal to the
      original but for those keys)
  judge.py score LABELLED.jsonl WORKDIR T1 [T2 ...]
      reads WORKDIR/report-T.json and WORKDIR/anomaly-T.jsonl (the decisions denied for anomaly)
      and prints the tables for one seed; also writes WORKDIR/score.json for the totals
  judge.py total SCORE.json [SCORE.json ...]
      sums several seeds
"""
import json
import os
import re
import sys
from collections import defaultdict

# ----------------------------------------------------------------------------- policy copy

KEY_RE = re.compile(r"^(\s*)([A-Za-z0-9_.-]+|\"[^\"]*\"|'[^']*')\s*:(\s*)(.*)$")


def _indent(line):
    return len(line) - len(line.lstrip(" "))


def _is_content(line):
    s = line.strip()
    return bool(s) and not s.startswith("#")


def _split_comment(value):
    """value text -> (value, comment) for a plain or quoted scalar."""
    if value.startswith(("'", '"')):
        q = value[0]
        end = value.find(q, 1)
        if end > 0:
            return value[: end + 1], value[end + 1:]
    m = re.search(r"\s#", value)
    if m:
        return value[: m.start()], value[m.start():]
    return value, ""


def set_key(lines, path, value):
    """Set a block-style YAML key to a scalar, inserting missing maps; True on success."""
    start, end, depth_indent = 0, len(lines), -1
    for level, key in enumerate(path):
        child_indent = None
        found = None
        for i in range(start, end):
            line = lines[i]
            if not _is_content(line):
                continue
            ind = _indent(line)
            if ind <= depth_indent:
                end = i
                break
            if child_indent is None:
                child_indent = ind
            if ind != child_indent:
                continue
            m = KEY_RE.match(line)
            if m and m.group(2).strip("'\"") == key:
                found = i
                break
        if child_indent is None:
            child_indent = depth_indent + 2 if depth_indent >= 0 else 0
        if found is None:
            # insert the rest of the path here
            ins, ind = [], child_indent
            for k in path[level:-1]:
                ins.append(" " * ind + f"{k}:")
                ind += 2
            ins.append(" " * ind + f"{path[-1]}: {value}")
            at = start if level == 0 else start
            lines[at:at] = ins
            return True
        m = KEY_RE.match(lines[found])
        rest = m.group(4)
        if level == len(path) - 1:
            _, comment = _split_comment(rest)
            lines[found] = f"{m.group(1)}{m.group(2)}: {value}" + (comment if comment else "")
            return True
        v, _ = _split_comment(rest)
        if v.strip():
            return False  # a flow map or a scalar where a map is needed: not handled as text
        # find the block's end
        depth_indent = child_indent
        start = found + 1
        blk_end = len(lines)
        for i in range(start, len(lines)):
            if _is_content(lines[i]) and _indent(lines[i]) <= depth_indent:
                blk_end = i
                break
        end = blk_end
    return False


def yaml_quote(s):
    return json.dumps(s)  # a JSON string is a valid YAML double-quoted scalar


def cmd_policy(policy, model, threshold, out):
    import yaml
    src = os.path.abspath(policy)
    base = os.path.dirname(src)
    text = open(src).read()
    orig = yaml.safe_load(text)
    lines = text.split("\n")
    ok = set_key(lines, ["adaptive", "anomaly", "model"], yaml_quote(os.path.abspath(model)))
    ok = ok and set_key(lines, ["adaptive", "anomaly", "threshold"], str(float(threshold)))
    env = orig.get("envoy_config") if isinstance(orig, dict) else None
    if ok and env and not os.path.isabs(str(env)):
        ok = set_key(lines, ["envoy_config"], yaml_quote(os.path.join(base, str(env))))
    ca = (orig.get("store") or {}).get("tls_ca") if isinstance(orig, dict) else None
    if ok and ca and not os.path.isabs(str(ca)):
        ok = set_key(lines, ["store", "tls_ca"], yaml_quote(os.path.join(base, str(ca))))
    new_text = "\n".join(lines)
    if ok:
        new = yaml.safe_load(new_text)
    if not ok or not _same_but(orig, new, model, threshold, base):
        # fall back: rebuild the whole document (comments lost; values the same)
        new = json.loads(json.dumps(orig))
        new.setdefault("adaptive", {}).setdefault("anomaly", {})
        new["adaptive"]["anomaly"]["model"] = os.path.abspath(model)
        new["adaptive"]["anomaly"]["threshold"] = float(threshold)
        if env and not os.path.isabs(str(env)):
            new["envoy_config"] = os.path.join(base, str(env))
        if ca and not os.path.isabs(str(ca)):
            new["store"]["tls_ca"] = os.path.join(base, str(ca))
        new_text = yaml.safe_dump(new, sort_keys=False)
        if not _same_but(orig, yaml.safe_load(new_text), model, threshold, base):
            sys.exit("judge.py: could not write a faithful policy copy")
    with open(out, "w") as f:
        f.write(new_text)


def _same_but(orig, new, model, threshold, base):
    a = json.loads(json.dumps(orig))
    b = json.loads(json.dumps(new))
    try:
        am = b["adaptive"]["anomaly"]
        if am.pop("model") != os.path.abspath(model) or float(am.pop("threshold")) != float(threshold):
            return False
    except (KeyError, TypeError):
        return False
    oa = a.setdefault("adaptive", {}) or {}
    a["adaptive"] = oa
    oan = oa.setdefault("anomaly", {}) or {}
    oa["anomaly"] = oan
    oan.pop("model", None)
    oan.pop("threshold", None)
    for k in ("envoy_config",):
        if k in a and not os.path.isabs(str(a[k])):
            a[k] = os.path.join(base, str(a[k]))
    if "store" in a and isinstance(a["store"], dict) and a["store"].get("tls_ca") and \
            not os.path.isabs(str(a["store"]["tls_ca"])):
        a["store"]["tls_ca"] = os.path.join(base, str(a["store"]["tls_ca"]))
    return a == b


# ----------------------------------------------------------------------------- strip

def cmd_strip(src, out):
    with open(src) as f, open(out, "w") as g:
        for line in f:
            o = json.loads(line)
            o.pop("actor", None)
            o["label"] = "abuse" if o.get("label") == "abuse" else "normal"
            g.write(json.dumps(o, separators=(",", ":")) + "\n")


# ----------------------------------------------------------------------------- score

def kind_of(actor):
    return actor.rsplit("-", 1)[0]


def load_traffic(path):
    line_actor = [None]  # 1-based
    line_status = [0]
    actor_label, actor_reqs = {}, defaultdict(int)
    subj_actors = defaultdict(set)
    for line in open(path):
        o = json.loads(line)
        a = o["actor"]
        line_actor.append(a)
        line_status.append(o.get("status", 200))
        actor_label[a] = o["label"]
        actor_reqs[a] += 1
        subj_actors[o["user"]].add(a)
    return line_actor, line_status, actor_label, actor_reqs, subj_actors


def pct(a, b):
    return 100.0 * a / b if b else 0.0


def cmd_score(labelled, work, thresholds):
    line_actor, line_status, actor_label, actor_reqs, subj_actors = load_traffic(labelled)
    actors = sorted(actor_label)
    legit = [a for a in actors if actor_label[a] == "legit"]
    abuse = [a for a in actors if actor_label[a] == "abuse"]
    req_legit = sum(actor_reqs[a] for a in legit)
    req_abuse = sum(actor_reqs[a] for a in abuse)
    shared = sum(1 for s, acts in subj_actors.items() if len({actor_label[x] for x in acts}) > 1)
    print(f"  traffic  {len(line_actor) - 1} requests, {len(subj_actors)} subjects; "
          f"{len(legit)} legitimate actors ({req_legit} requests), {len(abuse)} abusive actors ({req_abuse} requests); "
          f"subjects shared by legitimate and abusive actors: {shared}")
    res = {"legit_actors": len(legit), "abuse_actors": len(abuse), "legit_requests": req_legit,
           "abuse_requests": req_abuse, "thresholds": {}, "kinds": {}}
    per_t = {}
    for t in thresholds:
        rep = json.load(open(os.path.join(work, f"report-{t}.json")))
        summ = rep["summary"]
        flagged_subj = {f["subject"] for f in summ["flagged"]}
        denied = defaultdict(int)  # actor -> anomaly denials
        denied_ok = defaultdict(int)  # of which the upstream had answered below 400
        for line in open(os.path.join(work, f"anomaly-{t}.jsonl")):
            d = json.loads(line)
            if d.get("reason") != "anomaly":
                continue
            denied[line_actor[d["line"]]] += 1
            if line_status[d["line"]] < 400:
                denied_ok[line_actor[d["line"]]] += 1
        caught = set(a for a, n in denied.items() if n > 0)
        via_flag = set()
        for s in flagged_subj:
            via_flag |= subj_actors.get(s, set())
        caught |= via_flag
        per_t[t] = (caught, denied, flagged_subj, summ, denied_ok)
    # headline table
    print()
    print("  threshold   legit actors flagged   abusive actors caught   legit req denied (anomaly)   "
          "abuse req denied (anomaly)   subjects flagged")
    for t in thresholds:
        caught, denied, flagged_subj, summ, _ = per_t[t]
        lf = sum(1 for a in legit if a in caught)
        ac = sum(1 for a in abuse if a in caught)
        ld = sum(denied[a] for a in legit)
        ad = sum(denied[a] for a in abuse)
        print(f"  {float(t):<9.2f}   {lf:>4}/{len(legit):<4} {pct(lf, len(legit)):5.1f} %        "
              f"{ac:>4}/{len(abuse):<4} {pct(ac, len(abuse)):5.1f} %         "
              f"{pct(ld, req_legit):7.3f} % ({ld:>6})          {pct(ad, req_abuse):7.3f} % ({ad:>6})          "
              f"{len(flagged_subj)}")
        res["thresholds"][t] = {"legit_flagged": lf, "abuse_caught": ac, "legit_denied_anomaly": ld,
                                "abuse_denied_anomaly": ad, "subjects_flagged": len(flagged_subj)}
    # replay's own subject-level count, as a cross-check
    for t in thresholds:
        lab = per_t[t][3].get("labels") or {}
        if lab:
            print(f"  (replay at {t}: subjects flagged, abuse {lab.get('abuse_subjects_flagged')}/"
                  f"{lab.get('abuse_subjects')}, normal {lab.get('normal_subjects_flagged')}/{lab.get('normal_subjects')};"
                  f" all requests denied, abuse {pct(lab.get('abuse_denied', 0), lab.get('abuse_requests', 0)):.2f} %,"
                  f" normal {pct(lab.get('normal_denied', 0), lab.get('normal_requests', 0)):.2f} %)")
    # per kind at 0.8
    tk = "0.8" if "0.8" in per_t else thresholds[len(thresholds) // 2]
    res["kinds_threshold"] = tk
    caught, denied, flagged_subj, _, denied_ok = per_t[tk]
    kinds = defaultdict(lambda: [0, 0, 0, 0])  # actors, caught, requests, denied
    klabel = {}
    for a in actors:
        k = kind_of(a)
        klabel[k] = actor_label[a]
        v = kinds[k]
        v[0] += 1
        v[1] += a in caught
        v[2] += actor_reqs[a]
        v[3] += denied[a]
    print()
    print(f"  per kind at threshold {tk}:  flagged/caught actors, requests denied for anomaly")
    for lab in ("legit", "abuse"):
        for k in sorted(x for x in kinds if klabel[x] == lab):
            n, c, q, d = kinds[k]
            print(f"    {lab:5}  {k:24} {c:>3}/{n:<3}   {pct(d, q):6.2f} % of {q:>6} requests")
            res["kinds"][k] = {"label": lab, "actors": n, "caught": c, "requests": q, "denied": d}
    print()
    ld = sum(denied[a] for a in legit)
    ad = sum(denied[a] for a in abuse)
    print(f"  at {tk}: legitimate requests denied for anomaly {pct(ld, req_legit):.3f} % ({ld}/{req_legit}); "
          f"abusive requests denied for anomaly {pct(ad, req_abuse):.3f} % ({ad}/{req_abuse})")
    lok = sum(denied_ok[a] for a in legit)
    aok = sum(denied_ok[a] for a in abuse)
    print(f"  at {tk}: of those denials, the upstream had answered below 400 (a request that would have worked): "
          f"legitimate {lok} ({pct(lok, req_legit):.3f} % of legitimate requests), abusive {aok}")
    fl = [a for a in legit if a in caught]
    if fl:
        print(f"  legitimate actors flagged at {tk} (anomaly denials; flagged subjects of the actor):")
        for a in fl:
            subs = sorted(s for s in flagged_subj if a in subj_actors[s])
            shown = ", ".join(subs[:3]) + (f" (+{len(subs) - 3})" if len(subs) > 3 else "")
            print(f"    {a:28} {denied[a]:>6} denied of {actor_reqs[a]:>6}; {len(subs)} flagged: {shown}")
    with open(os.path.join(work, "score.json"), "w") as f:
        json.dump(res, f)


def cmd_total(files):
    tot = None
    for fn in files:
        r = json.load(open(fn))
        if tot is None:
            tot = r
            continue
        for k in ("legit_actors", "abuse_actors", "legit_requests", "abuse_requests"):
            tot[k] += r[k]
        for t, v in r["thresholds"].items():
            for k in v:
                tot["thresholds"][t][k] += v[k]
        for kd, v in r["kinds"].items():
            for k in ("actors", "caught", "requests", "denied"):
                tot["kinds"][kd][k] += v[k]
    L, A = tot["legit_actors"], tot["abuse_actors"]
    print("  threshold   legit actors flagged   abusive actors caught   legit req denied (anomaly)   "
          "abuse req denied (anomaly)")
    for t, v in tot["thresholds"].items():
        print(f"  {float(t):<9.2f}   {v['legit_flagged']:>4}/{L:<4} {pct(v['legit_flagged'], L):5.1f} %        "
              f"{v['abuse_caught']:>4}/{A:<4} {pct(v['abuse_caught'], A):5.1f} %         "
              f"{pct(v['legit_denied_anomaly'], tot['legit_requests']):7.3f} %                  "
              f"{pct(v['abuse_denied_anomaly'], tot['abuse_requests']):7.3f} %")
    print()
    print(f"  per kind at threshold {tot.get('kinds_threshold', '0.8')} (all seeds):")
    for lab in ("legit", "abuse"):
        for k in sorted(x for x in tot["kinds"] if tot["kinds"][x]["label"] == lab):
            v = tot["kinds"][k]
            print(f"    {lab:5}  {k:24} {v['caught']:>3}/{v['actors']:<3}   "
                  f"{pct(v['denied'], v['requests']):6.2f} % of {v['requests']:>7} requests")


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "strip":
        cmd_strip(sys.argv[2], sys.argv[3])
    elif cmd == "policy":
        cmd_policy(*sys.argv[2:6])
    elif cmd == "score":
        cmd_score(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif cmd == "total":
        cmd_total(sys.argv[2:])
    else:
        print(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
