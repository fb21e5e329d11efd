// Builds one real request per provider with its official SDK (openai,
// @anthropic-ai/sdk, @google/genai) from agenthost's exported tool
// definitions, sent to a capture server on loopback.
// Usage: node build.mjs BASE_URL DEFS_JSON
// DEFS_JSON holds {"openai": [...], "anthropic": [...], "gemini": {...}},
// the output of `agenthost schema --format ...` for each. Prints, per
// provider, "ok" or the error the SDK raised (some refuse before sending).
import { readFileSync } from "node:fs";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";

const [base, defsPath] = process.argv.slice(2);
const defs = JSON.parse(readFileSync(defsPath, "utf8"));
const out = {};
const attempt = async (name, fn) => {
  try {
    await fn();
    out[name] = "ok";
  } catch (e) {
    out[name] = String(e && e.message ? e.message : e);
  }
};
const messages = [{ role: "user", content: "Use a tool." }];

await attempt("openai", () =>
  new OpenAI({ baseURL: `${base}/v1`, apiKey: "sk-test", maxRetries: 0 }).chat.completions.create({
    model: "gpt-4o-mini", messages, tools: defs.openai,
  }));
await attempt("anthropic", () =>
  new Anthropic({ baseURL: base, apiKey: "sk-ant-test", maxRetries: 0 }).messages.create({
    model: "claude-sonnet-4-5", max_tokens: 1024, messages, tools: defs.anthropic,
  }));
await attempt("gemini", () =>
  new GoogleGenAI({ apiKey: "gemini-test", httpOptions: { baseUrl: base } }).models.generateContent({
    model: "gemini-2.5-flash", contents: "Use a tool.", config: { tools: [defs.gemini] },
  }));
console.log(JSON.stringify(out));
