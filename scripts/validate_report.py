#!/usr/bin/env python3
"""Validates a gpuattr report against schemas/report.schema.json (JSON Schema draft 2020-12).

Usage: validate_report.py REPORT.json [--schema SCHEMA.json]
Exit status: 0 valid; 1 invalid (each error printed with its JSON path); 2 usage or unreadable input.
"""
import argparse
import json
import pathlib
import sys

import jsonschema

DEFAULT_SCHEMA = pathlib.Path(__file__).resolve().parent.parent / "schemas" / "report.schema.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("--schema", default=str(DEFAULT_SCHEMA))
    args = parser.parse_args()
    try:
        schema = json.loads(pathlib.Path(args.schema).read_text(encoding="utf-8"))
        report = json.loads(pathlib.Path(args.report).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        print(f"validate_report: {error}", file=sys.stderr)
        return 2
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path))
    for error in errors:
        path = "/" + "/".join(str(part) for part in error.absolute_path)
        print(f"{args.report}: {path}: {error.message}", file=sys.stderr)
    if errors:
        return 1
    print(f"{args.report}: valid {schema.get('$id', '')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
