#!/usr/bin/env python3
"""Prints one `arlsim validate --json` report as a table: predicted and measured seconds with the
signed error per stage and per activity kind, the medians against the targets, the bytes moved
with checksums, the measured kernel time by kind, and each stage's kernels of each kind as
measured and as the cost model prices them alone.
Usage: validation_report.py REPORT.json TITLE"""
import json
import sys

r = json.load(open(sys.argv[1]))
print(f"\n{sys.argv[2]}: predicted {r['predicted_total_s']:.3f} s, measured {r['measured_total_s']:.3f} s")
for key, rows in (("stage", r["stages"]), ("kind", r["activities"])):
    for row in rows:
        print(f"  {row[key]:<12} predicted {row['predicted_s']:9.4f} s  measured {row['measured_s']:9.4f} s  {100 * row['error']:+8.1f}%")
print(f"  median |stage error|    {100 * r['median_abs_stage_error']:5.1f}%  (target <= 10%)   worst {100 * r['worst_abs_stage_error']:.1f}%")
print(f"  median |activity error| {100 * r['median_abs_activity_error']:5.1f}%  (target <= 15%)   worst {100 * r['worst_abs_activity_error']:.1f}%")
print(f"  {r['bytes_verified'] / 2**20:.1f} MiB moved with checksums, {r['checksum_failures']} checksum failures (target 0)")
k = r["kernels_measured_s"]
print("  measured kernel time: " + ", ".join(f"{n} {v:.3f} s" for n, v in k.items()))
for row in r.get("kernels", []):
    print(f"    {row['stage']:<12} {row['kind']:<17} x{row['count']:<7} predicted {row['predicted_s']:9.4f} s  "
          f"measured {row['measured_s']:9.4f} s  {100 * row['error']:+8.1f}%")
