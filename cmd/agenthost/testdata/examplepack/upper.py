import json, sys
args = json.load(sys.stdin)
print(json.dumps({"upper": args["text"].upper()}))
