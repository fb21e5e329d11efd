"""Generates the workspaces (ws/) and expected.json of the code-mode task set.

Run from anywhere: python3 generate.py. The programs (program.js, program.star) are
written by hand and left alone; the fixtures come from a fixed seed, so a run rewrites
them byte for byte. expected.json is computed here, independently of the tools, the
native script and the programs that TestCodeTasks checks against it (null: known only
from the tools, checked between the modes).
"""
import json, os, random, hashlib, shutil
random.seed(20261127)
root = os.path.dirname(os.path.abspath(__file__))
for task in os.listdir(root):
    shutil.rmtree(os.path.join(root, task, 'ws'), ignore_errors=True)
def w(task, rel, text):
    p = os.path.join(root, task, 'ws', rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    open(p, 'w').write(text)
def expect(task, v):
    open(os.path.join(root, task, 'expected.json'), 'w').write(json.dumps(v, sort_keys=True, indent=1) + '\n')

# 1 sales-totals: 12 monthly CSVs; total amount_cents per region
regions = ['north', 'south', 'east', 'west']
products = ['widget', 'gadget', 'gizmo', 'doohickey']
tot = {r: 0 for r in regions}
for m in range(1, 13):
    lines = ['region,product,amount_cents']
    for _ in range(8):
        r, p, a = random.choice(regions), random.choice(products), random.randint(100, 99999)
        tot[r] += a
        lines.append(f'{r},{p},{a}')
    w('sales-totals', f'sales/2025-{m:02d}.csv', '\n'.join(lines) + '\n')
w('sales-totals', 'README.md', 'Monthly sales exports, one CSV per month.\n')
expect('sales-totals', tot)

# 2 lookup-chain: follow next from start.json; 18 on the chain, 6 decoys
names = [f'{random.randrange(16**6):06x}.json' for _ in range(24)]
chain = names[:18]
s = 0
for i, n in enumerate(['start.json'] + chain):
    v = random.randint(1, 500)
    nxt = chain[i] if i < len(chain) else None
    s += v
    w('lookup-chain', 'chain/' + n, json.dumps({'value': v, 'next': nxt, 'note': 'record ' + n}) + '\n')
for n in names[18:]:
    w('lookup-chain', 'chain/' + n, json.dumps({'value': random.randint(1, 500), 'next': random.choice(chain), 'note': 'decoy'}) + '\n')
expect('lookup-chain', {'steps': 19, 'sum': s, 'last': chain[-1]})

# 3 error-lines: logs/<svc>/<day>.log; ERROR lines per service
svcs = ['api', 'auth', 'billing', 'search', 'mailer', 'worker']
errs = {v: 0 for v in svcs}
for v in svcs:
    for d in range(1, 4):
        lines = []
        for i in range(14):
            lvl = random.choice(['INFO', 'INFO', 'INFO', 'WARN', 'ERROR', 'DEBUG'])
            if lvl == 'ERROR':
                errs[v] += 1
            lines.append(f'2025-03-0{d}T10:{i:02d}:00Z {lvl} {v}: event {random.randint(1000, 9999)}')
        w('error-lines', f'logs/{v}/2025-03-0{d}.log', '\n'.join(lines) + '\n')
expect('error-lines', errs)

# 4 customer-join: customers.csv + orders/*.csv; total per country
countries = ['DE', 'FR', 'JP', 'US', 'BR']
cust = [(i, f'Customer {i}', random.choice(countries)) for i in range(1, 21)]
w('customer-join', 'customers.csv', 'id,name,country\n' + ''.join(f'{i},{n},{c}\n' for i, n, c in cust))
byc = {c: 0 for c in countries}
oid = 1000
for f in range(14):
    lines = ['order_id,customer_id,amount_cents']
    for _ in range(6):
        i, _, c = random.choice(cust)
        a = random.randint(500, 50000)
        byc[c] += a
        lines.append(f'{oid},{i},{a}')
        oid += 1
    w('customer-join', f'orders/batch-{f:02d}.csv', '\n'.join(lines) + '\n')
expect('customer-join', {c: v for c, v in byc.items() if v})

# 5 notes-deadline: notes mentioning "deadline": titles and their total words
words = 'the team plan review design launch budget meeting sprint customer feedback release scope risk owner status'.split()
hits = []
for k in range(16):
    title = f'Note {k:02d} ' + random.choice(['planning', 'retro', 'sync', 'design', 'ops'])
    body = [' '.join(random.choice(words) for _ in range(random.randint(12, 30))) + '.' for _ in range(3)]
    if k % 3 == 0:
        body.insert(random.randint(0, 3), 'The Deadline for this is ' + random.choice(['Friday', 'May 3', 'next sprint']) + '.')
    text = f'# {title}\n\n' + '\n\n'.join(body) + '\n'
    w('notes-deadline', f'notes/{k:02d}.md', text)
    if 'deadline' in text.lower():
        hits.append(title)
expect('notes-deadline', {'titles': sorted(hits), 'words': None})

# 6 manifest-verify: sha256 of 12 files against manifest.json; 2 tampered
files = {}
for k in range(12):
    name = f'pkg-{k:02d}.txt'
    text = f'package {k}\n' + ''.join(random.choice('abcdefgh') for _ in range(200)) + '\n'
    files[name] = hashlib.sha256(text.encode()).hexdigest()
    if k in (3, 9):
        text += 'tampered\n'
    w('manifest-verify', 'release/' + name, text)
w('manifest-verify', 'release/manifest.json', json.dumps({'files': files}, indent=1, sort_keys=True) + '\n')
expect('manifest-verify', {'mismatched': ['pkg-03.txt', 'pkg-09.txt'], 'checked': 12})

# 7 stock-reorder: SKUs below reorder_at, cost to refill to 2*reorder_at
low, cost = [], 0
for k in range(15):
    sku = f'SKU-{100 + k}'
    qty, at, unit = random.randint(0, 40), random.randint(5, 30), random.randint(50, 5000)
    if qty < at:
        low.append(sku)
        cost += (2 * at - qty) * unit
    w('stock-reorder', f'stock/{sku}.json', json.dumps({'sku': sku, 'qty': qty, 'reorder_at': at, 'unit_cents': unit, 'warehouse': random.choice(['A', 'B'])}) + '\n')
expect('stock-reorder', {'reorder': sorted(low), 'cost_cents': cost})

# 8 dependency-closure: transitive deps of app
pk = [f'lib{k:02d}' for k in range(22)]
deps = {}
for i, p in enumerate(pk):
    later = pk[i + 1:]
    deps[p] = sorted(random.sample(later[:5], min(len(later[:5]), random.randint(1, 2))))
deps['app'] = ['lib00', 'lib02']
for p, d in deps.items():
    w('dependency-closure', f'pkgs/{p}.json', json.dumps({'name': p, 'version': f'1.{random.randint(0, 9)}.0', 'deps': d}) + '\n')
seen, todo = set(), ['app']
while todo:
    p = todo.pop()
    for d in deps[p]:
        if d not in seen:
            seen.add(d); todo.append(d)
expect('dependency-closure', {'deps': sorted(seen), 'count': len(seen)})

# 9 word-census: words per file with text:stats; total and the longest file
for k in range(10):
    text = '\n'.join(' '.join(random.choice(words) for _ in range(random.randint(5, 15))) + '.' for _ in range(random.randint(3, 9))) + '\n'
    w('word-census', f'texts/t{k}.txt', text)
expect('word-census', None)
