// Totals per region over every monthly CSV.
const { entries } = await tools.fs.list({ path: "sales" });
const totals = {};
for (const e of entries) {
  if (e.type !== "file" || !e.path.endsWith(".csv")) continue;
  const { rows } = await tools.data.csv_to_json({ path: "sales/" + e.path });
  for (const r of rows) totals[r.region] = (totals[r.region] || 0) + Number(r.amount_cents);
}
return totals;
