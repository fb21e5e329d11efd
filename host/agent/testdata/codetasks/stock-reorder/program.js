// The SKUs below their reorder point, and the cost to refill them to twice it.
const { entries } = await tools.fs.list({ path: "stock" });
const reorder = [];
let cost = 0;
for (const e of entries) {
  if (!e.path.endsWith(".json")) continue;
  const p = JSON.parse((await tools.fs.read({ path: "stock/" + e.path })).content);
  if (p.qty < p.reorder_at) {
    reorder.push(p.sku);
    cost += (2 * p.reorder_at - p.qty) * p.unit_cents;
  }
}
reorder.sort();
return { reorder, cost_cents: cost };
