"""Writes a wheel (PEP 427) from a staged folder with the standard library alone: no PyPI here, so
neither `build` nor `wheel` can be assumed. A wheel is a zip: the package files, then
NAME-VERSION.dist-info/ with METADATA, WHEEL, entry_points.txt and RECORD (each file's sha256 and
size). Called by scripts/wheel/build.mjs:

    python3 scripts/wheel/pack.py STAGE OUT_DIR --name gpuwise --version 0.2.0 \
        --tag py3-none-manylinux_2_28_x86_64 --summary "..." --entry gpuwise=gpuwise._command:main

Prints the wheel's path. Files keep their executable bit (pip restores it from the zip's mode bits);
entries are sorted and dated SOURCE_DATE_EPOCH (default 2020-01-01) so that a rebuild is identical.
"""
import argparse
import base64
import hashlib
import os
import sys
import time
import zipfile


def record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("stage")
    ap.add_argument("out_dir")
    ap.add_argument("--name", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--tag", required=True, help="python-abi-platform, e.g. py3-none-manylinux_2_28_x86_64")
    ap.add_argument("--summary", default="")
    ap.add_argument("--license", default="MIT")
    ap.add_argument("--requires-python", default=">=3.8")
    ap.add_argument("--entry", action="append", default=[], help="console script NAME=module:function")
    args = ap.parse_args(argv)

    dist_name = args.name.replace("-", "_")
    info = "%s-%s.dist-info" % (dist_name, args.version)
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "1577836800"))
    date = time.gmtime(max(epoch, 315532800))[:6]  # zip dates start in 1980

    files = []  # (archive name, bytes, mode)
    for root, dirs, names in os.walk(args.stage):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for n in sorted(names):
            if n.endswith(".pyc"):
                continue
            path = os.path.join(root, n)
            rel = os.path.relpath(path, args.stage).replace(os.sep, "/")
            if rel.startswith(info + "/"):
                sys.exit("pack.py: %s: the stage already holds the dist-info folder" % rel)
            with open(path, "rb") as f:
                files.append((rel, f.read(), os.stat(path).st_mode & 0o777))

    metadata = [
        "Metadata-Version: 2.1",
        "Name: %s" % args.name,
        "Version: %s" % args.version,
        "Summary: %s" % args.summary,
        "License: %s" % args.license,
        "Requires-Python: %s" % args.requires_python,
    ]
    wheel = [
        "Wheel-Version: 1.0",
        "Generator: gpuwise scripts/wheel/pack.py",
        "Root-Is-Purelib: false",
        "Tag: %s" % args.tag,
    ]
    entries = ["[console_scripts]"] + [e.replace("=", " = ", 1) for e in args.entry]
    for name, lines in (("METADATA", metadata), ("WHEEL", wheel), ("entry_points.txt", entries)):
        files.append(("%s/%s" % (info, name), ("\n".join(lines) + "\n").encode("utf-8"), 0o644))

    record = ["%s,%s,%d" % (rel, record_hash(data), len(data)) for rel, data, _ in files]
    record.append("%s/RECORD,," % info)
    files.append(("%s/RECORD" % info, ("\n".join(record) + "\n").encode("utf-8"), 0o644))

    if not os.path.isdir(args.out_dir):
        os.makedirs(args.out_dir)
    out = os.path.join(args.out_dir, "%s-%s-%s.whl" % (dist_name, args.version, args.tag))
    tmp = out + ".part"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for rel, data, mode in files:
            entry = zipfile.ZipInfo(rel, date_time=date)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = (0o100000 | mode) << 16
            z.writestr(entry, data)
    os.replace(tmp, out)
    print(out)


if __name__ == "__main__":
    main(sys.argv[1:])
