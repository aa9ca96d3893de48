# check_schema.py: validates a JSON document (or the header of an hconvert container) against
# a schema in schemas/, resolving references between the schema files. Used by tests/cli.sh.
import json
import pathlib
import struct
import sys

import jsonschema

def load_doc(path):
    data = pathlib.Path(path).read_bytes()
    if data[:8] == b"\x89HCVT\r\n\x1a":
        hlen = struct.unpack_from("<Q", data, 24)[0]
        return json.loads(data[64:64 + hlen].decode("utf-8"))
    return json.loads(data.decode("utf-8"))

def main():
    schema_path = pathlib.Path(sys.argv[1]).resolve()
    store = {}
    for p in schema_path.parent.glob("*.schema.json"):
        s = json.loads(p.read_text())
        store[s["$id"]] = s
    schema = json.loads(schema_path.read_text())
    resolver = jsonschema.RefResolver(base_uri=schema["$id"], referrer=schema, store=store)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    errors = list(cls(schema, resolver=resolver).iter_errors(load_doc(sys.argv[2])))
    for e in errors:
        print("schema violation at /%s: %s" % ("/".join(map(str, e.absolute_path)), e.message))
    sys.exit(1 if errors else 0)

main()
