// Words per text (text:stats), the total, and the longest text.
const { entries } = await tools.fs.list({ path: "texts" });
const words = {};
let total = 0;
for (const e of entries) {
  const { content } = await tools.fs.read({ path: "texts/" + e.path });
  const s = await tools.text.stats({ text: content });
  words[e.path] = s.words;
  total += s.words;
}
const longest = Object.keys(words).sort((a, b) => words[b] - words[a] || (a < b ? -1 : 1))[0];
return { total, longest, words };
