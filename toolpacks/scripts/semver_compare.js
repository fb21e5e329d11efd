// node:semver-compare — compares SemVer 2.0.0 versions and sorts lists of them.
//
// wasi-command convention: one JSON object on stdin, one JSON value on
// stdout, exit 1 with {"error": {...}} on bad input. No dependencies.
"use strict";

const SEMVER = /^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

function fail(code, message) {
  process.stdout.write(JSON.stringify({ error: { code, message } }));
  process.exit(1);
}

function parse(text) {
  if (typeof text !== "string") fail("BAD_INPUT", "versions must be strings");
  const m = SEMVER.exec(text.trim());
  if (!m) fail("INVALID_VERSION", `"${text}" is not a SemVer 2.0.0 version (MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD])`);
  const num = s => {
    const n = Number(s);
    if (!Number.isSafeInteger(n)) fail("INVALID_VERSION", `"${text}": ${s} is too large`);
    return n;
  };
  return {
    version: text.trim().replace(/^v/, ""),
    major: num(m[1]),
    minor: num(m[2]),
    patch: num(m[3]),
    prerelease: m[4] ? m[4].split(".") : [],
    build: m[5] ? m[5].split(".") : [],
  };
}

// compareIdentifiers orders pre-release identifiers (SemVer §11.4).
function compareIdentifiers(a, b) {
  const an = /^\d+$/.test(a), bn = /^\d+$/.test(b);
  if (an && bn) return Math.sign(Number(a) - Number(b));
  if (an) return -1;
  if (bn) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

// compare returns -1, 0 or 1; build metadata never counts (SemVer §10).
function compare(a, b) {
  for (const k of ["major", "minor", "patch"]) {
    if (a[k] !== b[k]) return Math.sign(a[k] - b[k]);
  }
  const ap = a.prerelease, bp = b.prerelease;
  if (!ap.length && !bp.length) return 0;
  if (!ap.length) return 1; // a release outranks its pre-releases
  if (!bp.length) return -1;
  for (let i = 0; i < Math.max(ap.length, bp.length); i++) {
    if (i >= ap.length) return -1;
    if (i >= bp.length) return 1;
    const c = compareIdentifiers(ap[i], bp[i]);
    if (c) return c;
  }
  return 0;
}

function diff(a, b) {
  if (a.major !== b.major) return "major";
  if (a.minor !== b.minor) return "minor";
  if (a.patch !== b.patch) return "patch";
  if (a.prerelease.join(".") !== b.prerelease.join(".")) return "prerelease";
  if (a.build.join(".") !== b.build.join(".")) return "build";
  return "none";
}

function main(args) {
  if (args === null || typeof args !== "object") fail("BAD_INPUT", "arguments must be an object");
  const out = {};
  if (args.a !== undefined || args.b !== undefined) {
    if (args.a === undefined || args.b === undefined) fail("BAD_INPUT", "give both a and b");
    const a = parse(args.a), b = parse(args.b);
    const order = compare(a, b);
    out.order = order;
    out.relation = order < 0 ? "less" : order > 0 ? "greater" : "equal";
    out.difference = diff(a, b);
    out.a = a;
    out.b = b;
  }
  if (args.versions !== undefined) {
    if (!Array.isArray(args.versions)) fail("BAD_INPUT", "versions must be an array");
    const parsed = args.versions.map(v => ({ text: v, v: parse(v) }));
    parsed.sort((x, y) => compare(x.v, y.v) || (x.text < y.text ? -1 : x.text > y.text ? 1 : 0));
    if (args.descending) parsed.reverse();
    out.sorted = parsed.map(p => p.text);
    const stable = parsed.filter(p => p.v.prerelease.length === 0);
    out.latest = parsed.length ? (args.descending ? parsed[0] : parsed[parsed.length - 1]).text : null;
    out.latestStable = stable.length ? (args.descending ? stable[0] : stable[stable.length - 1]).text : null;
  }
  if (!Object.keys(out).length) fail("BAD_INPUT", "give a and b to compare, or versions to sort");
  return out;
}

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", d => (input += d));
process.stdin.on("end", () => {
  let args;
  try {
    args = JSON.parse(input || "{}");
  } catch (e) {
    fail("BAD_INPUT", "arguments are not JSON: " + e.message);
  }
  process.stdout.write(JSON.stringify(main(args)));
});
