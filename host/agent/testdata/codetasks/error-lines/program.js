// ERROR lines per service, over the whole log tree.
const { entries } = await tools.fs.list({ path: "logs", recursive: true });
const counts = {};
for (const e of entries) {
  if (e.type !== "file" || !e.path.endsWith(".log")) continue;
  const svc = e.path.split("/")[0];
  const { content } = await tools.fs.read({ path: "logs/" + e.path });
  counts[svc] = (counts[svc] || 0) + content.split("\n").filter((l) => l.includes(" ERROR ")).length;
}
return counts;
