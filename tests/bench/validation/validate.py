"""Predicts every published measurement in tests/bench/validation/*.json with arlsim and reports
the signed error (predicted - measured) / measured per row, and the median and worst absolute
error per kind. The rows are the test of the cost model, never its input.

With --bands FILE it writes the error bands that `arlsim estimate` prints (calib/error-bands.json):
for each kind, the 10th and 90th percentiles of the signed errors; with --check-bands FILE it
fails when FILE differs from what the current model gives (the bands must come from the model
that prints them)."""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def estimate(arlsim, stage, tmp, name):
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump(stage, f)
    out = subprocess.run([arlsim, "estimate", "--json", path], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("arlsim estimate failed on %s: %s" % (name, out.stderr.strip()))
    return json.loads(out.stdout)


def predict_rows(arlsim, tmp, file, stage_of, result_of):
    """Estimates the stage each row of `file` describes; returns result_of(row, estimate) per row."""
    data = json.load(open(os.path.join(HERE, file)))
    return [result_of(r, estimate(arlsim, stage_of(data, r), tmp, r["id"])) for r in data["rows"]]


def training(arlsim, tmp):
    def stage(data, r):
        return {"format": "arlsim-stage/1", "kind": "train", "model": data["models"].get(r["model"], r["model"]),
                "gpu": r["gpu"], "layout": r["layout"], "micro_batch": r["micro_batch"],
                "global_batch": r["global_batch"], "seq_len": r["seq_len"], "recompute": r["recompute"],
                "attention_kernel": r["attention_kernel"], **({"gpus_per_node": r["gpus_per_node"]} if "gpus_per_node" in r else {})}

    def result(r, e):
        return {"id": r["id"], "measured": r["measured_iteration_s"], "predicted": e["iteration_s"], "mfu": e["mfu"],
                "source": r["source"], "gpu": r["gpu"]}
    return predict_rows(arlsim, tmp, "training.json", stage, result)


def collectives(arlsim, tmp):
    def stage(data, r):
        return {"format": "arlsim-stage/1", "kind": "collective", "gpu": r["gpu"], "op": r["op"], "bytes": r["bytes"],
                "ranks": r["ranks"]}

    def result(r, e):
        factor = 2.0 * (r["ranks"] - 1) / r["ranks"] if r["op"] == "all_reduce" else 1.0
        measured = r["measured_time_us"] * 1e-6 if "measured_time_us" in r else \
            r["bytes"] * factor / (r["measured_busbw_gbps"] * 1e9)
        return {"id": r["id"], "measured": measured, "predicted": e["time_s"],
                "how": "%s/%s" % (e["algorithm"], e.get("protocol", "")), "source": r["source"], "gpu": r["gpu"]}
    return predict_rows(arlsim, tmp, "collectives.json", stage, result)


def rollouts(arlsim, tmp):
    def stage(data, r):
        s = {"format": "arlsim-stage/1", "kind": "rollout", "model": r["model"], "gpu": r["gpu"],
             "engine": r["engine"], "engines": 1,
             "requests": {"count": r["requests"], "input_tokens": r["input_tokens"],
                          "output_tokens": r["output_tokens"]}}
        if "arrival_rate_per_s" in r:  # sent at that rate (Poisson), not all at once
            s["arrival_rate_per_s"] = r["arrival_rate_per_s"]
        return s

    def result(r, e):
        # The time to serve them all: the benchmark's duration, else requests over its requests per second.
        measured = r["measured_duration_s"] if "measured_duration_s" in r else r["requests"] / r["measured_requests_per_s"]
        # The benchmark's mean time to first token and per output token (after the first), where published.
        latency = {k: (r["measured_%s_mean_s" % k], e["%s_s" % k]["mean"]) for k in ("ttft", "tpot")
                   if "measured_%s_mean_s" % k in r}
        return {"id": r["id"], "measured": measured, "predicted": e["makespan_s"], "latency": latency,
                "preemptions": e["preemptions"], "source": r["source"], "gpu": r["gpu"]}
    return predict_rows(arlsim, tmp, "rollout.json", stage, result)


def rl_steps(arlsim, tmp):
    data = json.load(open(os.path.join(HERE, "rl_steps.json")))
    results = []
    for r in data["rows"]:
        path = os.path.join(tmp, r["id"] + ".json")
        with open(path, "w") as f:
            json.dump(r["scenario"], f)
        out = subprocess.run([arlsim, "simulate", path, "--json"], capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit("arlsim simulate failed on %s: %s" % (r["id"], out.stderr.strip()))
        summary = json.loads(out.stdout)
        steps = summary["steps"]
        if r.get("steady_state"):
            # An asynchronous run's steady steps: all but the first (no rollout before it to overlap)
            # and the last (no rollout after it).
            steps = steps[1:-1]
        predicted = statistics.mean(st["time_s"] for st in steps)
        # Stages the source gives, each the mean over the same steps; a key "a+b" is the sum of
        # those simulated stages (a framework timing two of them as one).
        stages = []
        for key, measured in r.get("measured_stages_s", {}).items():
            if not measured > 0:
                sys.exit("%s: measured_stages_s[%r] must be a positive number of seconds, not %r" % (r["id"], key, measured))
            parts = key.split("+")
            for part in parts:
                if part not in steps[0]["stages"]:
                    sys.exit("%s: measured_stages_s names %r, which is no stage of a simulated step (%s)" % (
                        r["id"], part, ", ".join(steps[0]["stages"])))
            stages.append({"stage": key, "measured": measured,
                           "predicted": statistics.mean(sum(st["stages"][p] for p in parts) for st in steps)})
        results.append({"id": r["id"], "measured": r["measured_step_s"], "predicted": predicted,
                        "rollout_share": summary["stats"]["stage_share"]["rollout"], "source": r["source"],
                        "stages": stages})
    return results


def stage_table(results):
    """The stages of the RL-step rows whose source gives them, against the simulated stages (target:
    each within 25%); not part of the bands, which are of whole steps."""
    rows = [(r["id"], st) for r in results for st in r["stages"]]
    if not rows:
        return
    print("\n### RL-step stages (where the source gives them; mean seconds a step)\n")
    print("| row | stage | measured s | predicted s | error |")
    print("|---|---|---|---|---|")
    errors = []
    for row, st in rows:
        e = st["predicted"] / st["measured"] - 1
        errors.append(e)
        print("| %s | %s | %.4g | %.4g | %+.1f%% |" % (row, st["stage"], st["measured"], st["predicted"], 100 * e))
    within = sum(1 for e in errors if abs(e) <= 0.25)
    print("\n%d stages: median |error| %.1f%%, worst %.1f%%, median signed %+.1f%%; %d of %d within 25%%." % (
        len(errors), 100 * statistics.median([abs(e) for e in errors]), 100 * max(abs(e) for e in errors),
        100 * statistics.median(errors), within, len(errors)))


def quantile(xs, q):
    xs = sorted(xs)
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (pos - lo) * (xs[hi] - xs[lo])


def summary(results):
    errors = [r["predicted"] / r["measured"] - 1 for r in results]
    abs_errors = [abs(e) for e in errors]
    return {"rows": len(results), "median_abs_error": round(statistics.median(abs_errors), 4),
            "worst_abs_error": round(max(abs_errors), 4), "median_signed_error": round(statistics.median(errors), 4),
            "error_low": round(quantile(errors, 0.1), 4), "error_high": round(quantile(errors, 0.9), 4)}


def latency_table(results):
    """The rollout rows' mean TTFT and TPOT next to the published ones: a test of the engine model's
    latencies, not part of the bands (which are of the time to serve every request)."""
    rows = [r for r in results if r["latency"]]
    if not rows:
        return
    print("\n### Rollout latencies (mean time to first token, s; mean time per output token, ms)\n")
    print("| row | TTFT measured | TTFT predicted | error | TPOT measured | TPOT predicted | error |")
    print("|---|---|---|---|---|---|---|")
    errors = {"ttft": [], "tpot": []}
    for r in rows:
        cells = []
        for k, scale in (("ttft", 1.0), ("tpot", 1e3)):
            if k in r["latency"]:
                m, p = r["latency"][k]
                errors[k].append(p / m - 1)
                cells.append("%.4g | %.4g | %+.1f%%" % (m * scale, p * scale, 100 * (p / m - 1)))
            else:
                cells.append("- | - | -")
        print("| %s | %s | %s |" % (r["id"], cells[0], cells[1]))
    for k, name in (("ttft", "TTFT"), ("tpot", "TPOT")):
        if errors[k]:
            print("\n%s: %d rows, median |error| %.1f%%, median signed %+.1f%%." % (
                name, len(errors[k]), 100 * statistics.median([abs(e) for e in errors[k]]),
                100 * statistics.median(errors[k])))


BAND_MINIMUM_ROWS = 5  # as sim/model/error_band.h's kBandMinimumRows


def table(title, results, unit, scale, extra=None):
    print("\n### %s\n" % title)
    head = "| row | measured %s | predicted %s | error |" % (unit, unit)
    sep = "|---|---|---|---|"
    if extra:
        head += " %s |" % extra[0]
        sep += "---|"
    print(head)
    print(sep)
    for r in results:
        line = "| %s | %.4g | %.4g | %+.1f%% |" % (r["id"], r["measured"] * scale, r["predicted"] * scale,
                                                  100 * (r["predicted"] / r["measured"] - 1))
        if extra:
            line += " %s |" % extra[1](r)
        print(line)
    s = summary(results)
    print("\n%d rows: median |error| %.1f%%, worst %.1f%%, median signed %+.1f%%; 10th-90th percentile of the signed "
          "error %+.1f%% to %+.1f%%." % (s["rows"], 100 * s["median_abs_error"], 100 * s["worst_abs_error"],
                                        100 * s["median_signed_error"], 100 * s["error_low"], 100 * s["error_high"]))
    # A GPU with enough rows of its own has its own band (sim/model/error_band.h: kBandMinimumRows):
    # the same hardware and its profile's sources.
    rows_of = {}
    for r in results:
        if "gpu" in r:
            rows_of.setdefault(r["gpu"], []).append(r)
    by_gpu = {g: summary(rows) for g, rows in sorted(rows_of.items()) if len(rows) >= BAND_MINIMUM_ROWS}
    if by_gpu:
        s["by_gpu"] = by_gpu
        print("By GPU: " + "; ".join("%s %d rows, median |error| %.1f%%, 10th-90th percentile %+.1f%% to %+.1f%%" % (
            g, b["rows"], 100 * b["median_abs_error"], 100 * b["error_low"], 100 * b["error_high"]) for g, b in by_gpu.items()) + ".")
    return s


def main():
    p = argparse.ArgumentParser()
    p.add_argument("arlsim")
    p.add_argument("--bands", help="write the error bands to this file")
    p.add_argument("--check-bands", help="fail when this bands file differs from the current model's")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        train = training(a.arlsim, tmp)
        coll = collectives(a.arlsim, tmp)
        roll = rollouts(a.arlsim, tmp)
        steps = rl_steps(a.arlsim, tmp)
    quiet = a.check_bands is not None
    if quiet:
        sys.stdout = open(os.devnull, "w")
    kinds = {
        "training": table("Training iterations", train, "s", 1.0, ("MFU", lambda r: "%.1f%%" % (100 * r["mfu"]))),
        "collective": table("Collectives (nccl-tests)", coll, "us", 1e6, ("chosen", lambda r: r["how"])),
        "rollout": table("Rollouts (vLLM throughput runs; time to serve every request)", roll, "s", 1.0,
                         ("preemptions", lambda r: str(r["preemptions"]))),
        "rl_step": None,
    }
    latency_table(roll)
    kinds["rl_step"] = table("RL steps (mean step time)", steps, "s", 1.0,
                             ("rollout share", lambda r: "%.0f%%" % (100 * r["rollout_share"])))
    stage_table(steps)
    bands = {"format": "arlsim-error-bands/1",
             "description": "Signed errors (predicted - measured) / measured of the cost model against the published "
                            "measurements in tests/bench/validation, per kind; a prediction p is printed with the band "
                            "[p / (1 + error_high), p / (1 + error_low)], the 10th to 90th percentile. Written by "
                            "tests/bench/validate_model.sh; do not edit.",
             "kinds": kinds}
    text = json.dumps(bands, indent=2) + "\n"
    if a.bands:
        with open(a.bands, "w") as f:
            f.write(text)
    if a.check_bands:
        old = open(a.check_bands).read()
        if old != text:
            sys.stderr.write("%s is not what the current model gives; regenerate it with "
                             "tests/bench/validate_model.sh BUILD --bands %s\n" % (a.check_bands, a.check_bands))
            sys.stderr.write("expected:\n" + text)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
