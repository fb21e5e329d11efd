// The notes that mention a deadline: their titles, and their words in all.
const { entries } = await tools.fs.list({ path: "notes" });
const titles = [];
let words = 0;
for (const e of entries) {
  const { content } = await tools.fs.read({ path: "notes/" + e.path });
  if (!/deadline/i.test(content)) continue;
  titles.push(content.split("\n")[0].replace(/^# /, ""));
  words += (await tools.text.stats({ text: content })).words;
}
titles.sort();
return { titles, words };
