// The shape of the house (docs/contributing.md, "the tree"): operator/'s import graph has no cycle
// and no import that runs up the floors; the product's runtime code never reaches the sandbox but
// through the `sandbox` command's module, loaded by a dynamic import (by that command, and by
// `plan --offline`, which plans in a sandbox); no source file is over ~600 lines without saying
// why at its top.
//
// The runtime graph is esbuild's (the metafile of a bundle of every source file: static and dynamic
// imports as Node resolves them); type-only imports, which esbuild erases, are added from the
// sources' import declarations, so a cycle through types counts too.
import t from 'tap'
import { readFileSync, readdirSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { metafileOf } from './support/import-graph.ts'

type Kind = 'static' | 'dynamic' | 'type'
interface Edge {
  from: string
  to: string
  kind: Kind
}

const sources = (readdirSync('operator', { recursive: true }) as string[])
  .map((f) => `operator/${f}`)
  .filter((f) => /\.(ts|js)$/.test(f))
  .sort()

/** The sandbox command: the product's only door to the sandbox. */
const BOUNDARY = 'operator/cli/sandbox.ts'

/**
 * The floors, bottom up: a file may import its own floor and those below, in its own column. The
 * sandbox is a column of its own beside the product, on the same Kubernetes primitives.
 */
const FLOORS: { match: RegExp; column: 'shared' | 'product' | 'sandbox'; floor: number; what: string }[] = [
  { match: /^operator\/kube\/[^/]+$/, column: 'shared', floor: 0, what: 'Kubernetes primitives' },
  { match: /^operator\/kube\/builtin\//, column: 'shared', floor: 1, what: "the built-in kinds' defaults and validation" },
  { match: /^operator\/kube\/cel\//, column: 'shared', floor: 1, what: "CEL rules (x-kubernetes-validations) and Kubernetes' CEL libraries" },
  { match: /^operator\/(render|controller)\//, column: 'product', floor: 2, what: 'render, controller runtime' },
  { match: /^operator\/memcached\//, column: 'product', floor: 2, what: "memcached's protocol, as the operator speaks it to a pod" },
  { match: /^operator\/api\//, column: 'product', floor: 3, what: 'the Memcached API' },
  { match: /^operator\/reconcile\//, column: 'product', floor: 4, what: 'reconcile' },
  { match: /^operator\/fleet\//, column: 'product', floor: 4, what: "the fleet's plan" },
  { match: /^operator\/cli\//, column: 'product', floor: 5, what: 'the commands' },
  { match: /^operator\/snapshot\//, column: 'product', floor: 6, what: 'the start-up snapshot' },
  { match: /^operator\/sandbox\/pipeline\//, column: 'sandbox', floor: 3, what: "the sandbox's request pipeline" },
  { match: /^operator\/sandbox\/cluster\.ts$/, column: 'sandbox', floor: 4, what: "the sandbox's API server" },
  { match: /^operator\/sandbox\/(http\.ts|auth\/index\.ts|controllers\/)/, column: 'sandbox', floor: 5, what: "the sandbox's HTTP front, authentication and controllers" },
  { match: /^operator\/sandbox\/index\.ts$/, column: 'sandbox', floor: 6, what: 'the sandbox assembled' },
  { match: /^operator\/sandbox\//, column: 'sandbox', floor: 2, what: "the sandbox's parts (storage, registry, apply, admission, auth)" },
]

function floorOf(file: string): (typeof FLOORS)[number] | undefined {
  return FLOORS.find((f) => f.match.test(file))
}

/** Type-only imports (`import type …`, `export type … from`), which esbuild erases. */
function typeImports(file: string): Edge[] {
  const text = readFileSync(file, 'utf8')
  const out: Edge[] = []
  for (const m of text.matchAll(/^\s*(?:import|export)\s+type\s[^'"]*?\sfrom\s+['"](\.{1,2}\/[^'"]+)['"]/gm)) {
    out.push({ from: file, to: normalize(join(dirname(file), m[1] as string)), kind: 'type' })
  }
  return out
}

async function importGraph(): Promise<Edge[]> {
  const metafile = await metafileOf(sources, process.cwd())
  const edges: Edge[] = []
  for (const [from, input] of Object.entries(metafile.inputs)) {
    if (!from.startsWith('operator/')) continue
    for (const i of input.imports) {
      if (i.external || !i.path.startsWith('operator/')) continue
      if (!/\.(ts|js)$/.test(i.path)) continue
      edges.push({ from, to: i.path, kind: i.kind === 'dynamic-import' ? 'dynamic' : 'static' })
    }
  }
  for (const f of sources) edges.push(...typeImports(f))
  return edges
}

const edges = await importGraph()

t.test('the graph is read: every source file is in it, and it has the imports everyone knows of', async (t) => {
  const seen = new Set(edges.flatMap((e) => [e.from, e.to]))
  // Scripts that node runs by path: the executable's start-up and the snapshot's build.
  const scripts = /^operator\/(cli\/(main|node-version)\.js|snapshot\/(build|entry)\.ts)$/
  t.same(sources.filter((f) => !seen.has(f) && !scripts.test(f)), [], 'files that import nothing and that nothing imports')
  const has = (from: string, to: string, kind: Kind) => edges.some((e) => e.from === from && e.to === to && e.kind === kind)
  t.ok(has('operator/cli/program.ts', BOUNDARY, 'dynamic'), 'the sandbox command is imported dynamically')
  t.ok(has('operator/cli/plan-offline.ts', BOUNDARY, 'dynamic'), 'plan --offline takes its sandbox through the same door, dynamically')
  t.ok(has('operator/sandbox/cluster.ts', 'operator/sandbox/pipeline/writes.ts', 'static'))
  t.ok(has('operator/sandbox/openapi.ts', 'operator/sandbox/registry.ts', 'type'), 'a type-only import is an edge')
})

t.test('every source file has a floor', async (t) => {
  t.same(sources.filter((f) => !floorOf(f)), [])
})

t.test('no import cycle anywhere in operator/', async (t) => {
  const next = new Map<string, string[]>()
  for (const e of edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to])
  const cycles: string[] = []
  const state = new Map<string, 'open' | 'done'>()
  const stack: string[] = []
  const visit = (f: string): void => {
    state.set(f, 'open')
    stack.push(f)
    for (const g of next.get(f) ?? []) {
      if (state.get(g) === 'open') cycles.push([...stack.slice(stack.indexOf(g)), g].join(' → '))
      else if (!state.has(g)) visit(g)
    }
    stack.pop()
    state.set(f, 'done')
  }
  for (const f of sources) if (!state.has(f)) visit(f)
  t.same(cycles, [])
})

t.test('no import runs back up the floors, and no column imports another', async (t) => {
  const wrong: string[] = []
  for (const e of edges) {
    const a = floorOf(e.from)
    const b = floorOf(e.to)
    if (!a || !b) continue
    if (e.from === BOUNDARY && b.column === 'sandbox') continue
    if (b.column !== 'shared' && b.column !== a.column) wrong.push(`${e.from} (${a.what}) → ${e.to} (${b.what}): another column`)
    else if (b.floor > a.floor && !(e.to === BOUNDARY && e.kind === 'dynamic')) wrong.push(`${e.from} (${a.what}) → ${e.to} (${b.what}): up the floors`)
  }
  t.same(wrong, [])
})

t.test("the product's runtime code never reaches the sandbox; the sandbox command is its only door, opened by a dynamic import", async (t) => {
  const next = new Map<string, Edge[]>()
  for (const e of edges) if (e.kind !== 'type') next.set(e.from, [...(next.get(e.from) ?? []), e])
  const reached: string[] = []
  for (const start of sources.filter((f) => floorOf(f)?.column !== 'sandbox' && f !== BOUNDARY)) {
    const seen = new Set([start])
    const queue = [start]
    while (queue.length > 0) {
      const f = queue.shift() as string
      for (const e of next.get(f) ?? []) {
        if (e.to === BOUNDARY || seen.has(e.to)) continue
        if (floorOf(e.to)?.column === 'sandbox') reached.push(`${start} reaches ${e.to} (through ${f})`)
        seen.add(e.to)
        queue.push(e.to)
      }
    }
  }
  t.same(reached, [])
  t.same(
    edges.filter((e) => e.to === BOUNDARY && e.kind !== 'dynamic').map((e) => `${e.from} imports the sandbox command statically`),
    [],
  )
})

t.test('no source file is over ~600 lines without saying why at its top', async (t) => {
  const long = sources
    .map((f) => ({ f, text: readFileSync(f, 'utf8') }))
    .filter(({ text }) => text.split('\n').length > 620)
    .filter(({ text }) => !/^\s*\*\s*Over 600 lines: \S/m.test(text.slice(0, text.indexOf('*/') + 2)))
    .map(({ f, text }) => `${f}: ${text.split('\n').length} lines`)
  t.same(long, [])
})
