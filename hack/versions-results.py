"""Records one release's run of hack/test-versions.sh in tests/cluster/versions/results.json.

    versions-results.py RESULTS MINOR VERSION SECONDS STEPS   merge that release's entry
    versions-results.py --summary RESULTS                      print a table of every entry
    versions-results.py --failures RESULTS                     print what failed in each entry, and why

STEPS holds one line per stage, "NAME ok|fail SECONDS LOG", as hack/test-versions.sh writes it; from the
logs come the build's compile errors, the suite's failing tests and the targets' failing tasks.
"""
import datetime
import json
import os
import re
import sys


def tail_errors(log, limit=20):
    """The compile errors (file:line: message) of a failed go build, else the log's last lines."""
    with open(log, encoding="utf-8", errors="replace") as f:
        lines = [line.rstrip() for line in f]
    errors = [line for line in lines if re.match(r"^\S+\.go:\d+:\d+: ", line)]
    return (errors or lines)[-limit:]


def suite_details(log):
    """pytest's counts and its FAILED lines (short test summary)."""
    with open(log, encoding="utf-8", errors="replace") as f:
        text = f.read()
    counts = {}
    summary = re.findall(r"^=+ (.*?) in [\d.]+s.*=+$", text, re.M)
    if summary:
        for n, what in re.findall(r"(\d+) (\w+)", summary[-1]):
            counts[what] = int(n)
    failed = [line[len("FAILED "):][:300] for line in text.splitlines() if line.startswith("FAILED ")]
    return {"counts": counts, "failed_tests": failed}


def record(path, minor, version, seconds, steps_file):
    entry = {"version": version, "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
             "seconds": int(seconds), "ok": True, "stages": {}, "targets": {}}
    with open(steps_file, encoding="utf-8") as f:
        for line in f:
            name, result, secs, log = line.split(None, 3)
            log = log.strip()
            item = {"ok": result == "ok", "seconds": int(secs)}
            entry["ok"] = entry["ok"] and item["ok"]
            if name == "cluster-suite":
                item.update(suite_details(log))
            elif not item["ok"] and name.startswith("target:"):
                failures = os.path.splitext(log)[0] + ".failures"
                if os.path.exists(failures):
                    with open(failures, encoding="utf-8", errors="replace") as f:
                        item["failed_tasks"] = [x for x in f.read().splitlines() if x and not x.startswith("--- ")]
            elif not item["ok"]:
                item["errors"] = tail_errors(log)
            if name.startswith("target:"):
                entry["targets"][name[len("target:"):]] = item
            else:
                entry["stages"][name] = item
    if "up" not in entry["stages"]:
        entry["ok"] = False
    data = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    data.setdefault("versions", {})[minor] = entry
    data["versions"] = dict(sorted(data["versions"].items(), key=lambda kv: int(kv[0].split(".")[1])))
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.write("\n")


def summary(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    print("%-6s %-9s %-5s %7s  %s" % ("K8S", "version", "ok", "seconds", "stages and targets"))
    for minor, e in data.get("versions", {}).items():
        parts = ["%s %s %ds" % (n, "ok" if s["ok"] else "FAIL", s["seconds"]) for n, s in e["stages"].items()]
        parts += ["%s %s" % (n, "ok" if s["ok"] else "FAIL") for n, s in e["targets"].items()]
        print("%-6s %-9s %-5s %7d  %s" % (minor, e["version"], "yes" if e["ok"] else "NO", e["seconds"], ", ".join(parts)))


def failures(path):
    """Each failed stage and target of every entry, with its failing tests, tasks or last log lines."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    for minor, e in data.get("versions", {}).items():
        for kind, items in (("stage", e["stages"]), ("target", e["targets"])):
            for name, item in items.items():
                if item["ok"]:
                    continue
                print("K8S=%s %s %s failed after %ds" % (minor, kind, name, item["seconds"]))
                for line in item.get("failed_tests", []) + item.get("failed_tasks", []) + item.get("errors", []):
                    print("    " + line)
        if "up" not in e["stages"]:
            print("K8S=%s: the cluster did not come up" % minor)


def main(argv):
    if argv[:1] in (["--summary"], ["--failures"]) and len(argv) == 2:
        (summary if argv[0] == "--summary" else failures)(argv[1])
        return 0
    if len(argv) != 5:
        sys.stderr.write(__doc__)
        return 2
    record(*argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
