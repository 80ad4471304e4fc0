/**
 * Transcribes structured-merge-diff's merge test tables (`merge/*_test.go`, the `map[string]TestCase`
 * literals run through `internal/fixture`) into `test/fixtures/smd-merge-tables.json`, which
 * `test/sandbox-apply-smd-tables.test.ts` runs against the sandbox's apply engine; and the typed
 * value tables of `typed/merge_test.go` (`mergeCases`) and `typed/symdiff_test.go`
 * (`symdiffCases`) into `test/fixtures/smd-typed-tables.json`, which
 * `test/sandbox-apply-smd-typed-tables.test.ts` runs against the engine's merge and comparison.
 *
 *   node test/support/smd-transcribe.ts <structured-merge-diff checkout or bare repository> [tag]
 *
 * The tag defaults to the one Kubernetes 1.34 vendors (sigs.k8s.io/structured-merge-diff/v6
 * v6.3.0). A bare repository is read with `git show <tag>:<path>`. Only the Go literal syntax those
 * tables use is understood: composite literals, calls, strings (raw and quoted), numbers, booleans.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse as parseYAML } from 'yaml'

const repo = process.argv[2]
const tag = process.argv[3] ?? 'v6.3.0'
if (repo === undefined) {
  process.stderr.write('usage: node test/support/smd-transcribe.ts <structured-merge-diff repository> [tag]\n')
  process.exit(2)
}
const gitDir = existsSync(join(repo, '.git')) ? join(repo, '.git') : repo
const git = (...args: string[]): string => execFileSync('git', ['--git-dir', gitDir, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 })
const commit = git('rev-parse', `${tag}^{commit}`).trim()
const files = git('ls-tree', '--name-only', commit, 'merge/').split('\n').filter((f) => f.endsWith('_test.go')).sort()

// ------------------------------------------------------------------ Go literal parsing

type Node =
  | { t: 'str'; v: string }
  | { t: 'num'; v: number }
  | { t: 'id'; v: string }
  | { t: 'lit'; type: string; elems: { key?: Node; value: Node }[] }
  | { t: 'call'; fn: string; args: Node[] }

class GoParser {
  #s: string
  #i: number
  constructor(s: string, i: number) {
    this.#s = s
    this.#i = i
  }
  get pos(): number {
    return this.#i
  }
  #ws(): void {
    for (;;) {
      while (this.#i < this.#s.length && /\s/.test(this.#s[this.#i] as string)) this.#i++
      if (this.#s.startsWith('//', this.#i)) {
        const e = this.#s.indexOf('\n', this.#i)
        this.#i = e < 0 ? this.#s.length : e
        continue
      }
      if (this.#s.startsWith('/*', this.#i)) {
        this.#i = this.#s.indexOf('*/', this.#i) + 2
        continue
      }
      return
    }
  }
  #peek(): string {
    this.#ws()
    return this.#s[this.#i] ?? ''
  }
  #eat(c: string): void {
    if (this.#peek() !== c) throw new Error(`expected ${c} at ${this.#i}: ${this.#s.slice(this.#i, this.#i + 60)}`)
    this.#i++
  }
  value(): Node {
    const c = this.#peek()
    if (c === '"') {
      const m = /^"(?:[^"\\]|\\.)*"/.exec(this.#s.slice(this.#i)) as RegExpExecArray
      this.#i += m[0].length
      return { t: 'str', v: JSON.parse(m[0]) as string }
    }
    if (c === '`') {
      const e = this.#s.indexOf('`', this.#i + 1)
      const v = this.#s.slice(this.#i + 1, e)
      this.#i = e + 1
      return { t: 'str', v }
    }
    if (/[-0-9]/.test(c)) {
      const m = /^-?[0-9.]+/.exec(this.#s.slice(this.#i)) as RegExpExecArray
      this.#i += m[0].length
      return { t: 'num', v: Number(m[0]) }
    }
    if (c === '{') return this.#composite('')
    // A type or identifier: `fieldpath.ManagedFields`, `[]Operation`, `map[string]TestCase`, `&x`.
    const m = /^(?:&|\*|\[\]|map\[[^\]]*\])*[A-Za-z_][\w.]*(?:\[[^\]]*\])?[\w.*]*/.exec(this.#s.slice(this.#i))
    if (!m) throw new Error(`unexpected ${this.#s.slice(this.#i, this.#i + 60)}`)
    this.#i += m[0].length
    const name = m[0]
    const next = this.#peek()
    if (next === '{') return this.#composite(name)
    if (next === '(') {
      this.#eat('(')
      const args: Node[] = []
      while (this.#peek() !== ')') {
        args.push(this.value())
        if (this.#peek() === ',') this.#eat(',')
      }
      this.#eat(')')
      return { t: 'call', fn: name, args }
    }
    return { t: 'id', v: name }
  }
  #composite(type: string): Node {
    this.#eat('{')
    const elems: { key?: Node; value: Node }[] = []
    while (this.#peek() !== '}') {
      const first = this.value()
      if (this.#peek() === ':') {
        this.#eat(':')
        elems.push({ key: first, value: this.value() })
      } else elems.push({ value: first })
      if (this.#peek() === ',') this.#eat(',')
    }
    this.#eat('}')
    return { t: 'lit', type, elems }
  }
}

function field(n: Node, name: string): Node | undefined {
  if (n.t !== 'lit') return undefined
  return n.elems.find((e) => e.key?.t === 'id' && e.key.v === name)?.value
}

function str(n: Node | undefined): string | undefined {
  return n?.t === 'str' ? n.v : undefined
}

// ------------------------------------------------------------------ fixture values

/** FixTabsOrDie: drop the first line if empty, then the first line's leading tabs from every line. */
function fixTabs(y: string): string {
  let lines = y.split('\n')
  if (lines[0] === '' && lines.length > 1) lines = lines.slice(1)
  const prefix = /^\t*/.exec(lines[0] ?? '')?.[0] ?? ''
  return lines.map((l, i) => (i === lines.length - 1 && l.trim() === '' ? '' : l.startsWith(prefix) ? l.slice(prefix.length) : l)).join('\n')
}

function yamlValue(n: Node | undefined): unknown {
  const y = str(n)
  if (y === undefined) return undefined
  return parseYAML(fixTabs(y)) ?? null
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json }

function scalar(n: Node): Json {
  if (n.t === 'str' || n.t === 'num') return n.v
  if (n.t === 'id' && (n.v === 'true' || n.v === 'false')) return n.v === 'true'
  if (n.t === 'call' && /^(float64|int64|int)$/.test(n.fn) && n.args.length === 1) return scalar(n.args[0] as Node)
  throw new Error(`not a scalar: ${JSON.stringify(n)}`)
}

function sortedJson(o: Record<string, Json>): string {
  return '{' + Object.keys(o).sort().map((k) => JSON.stringify(k) + ':' + JSON.stringify(o[k])).join(',') + '}'
}

/** A path (`_P(...)`) as fieldsV1 path elements. */
function path(n: Node): string[] {
  if (n.t !== 'call' || n.fn !== '_P') throw new Error(`not a path: ${JSON.stringify(n)}`)
  return n.args.map((a) => {
    if (a.t === 'str') return 'f:' + a.v
    if (a.t === 'num') return 'i:' + a.v
    if (a.t === 'call' && a.fn === '_V') return 'v:' + JSON.stringify(scalar(a.args[0] as Node))
    if (a.t === 'call' && a.fn === '_KBF') {
      const o: Record<string, Json> = {}
      for (let i = 0; i < a.args.length; i += 2) o[scalar(a.args[i] as Node) as string] = scalar(a.args[i + 1] as Node)
      return 'k:' + sortedJson(o)
    }
    throw new Error(`unknown path element: ${JSON.stringify(a)}`)
  })
}

function set(n: Node): string[][] {
  if (n.t !== 'call' || n.fn !== '_NS') throw new Error(`not a set: ${JSON.stringify(n)}`)
  return n.args.map(path)
}

interface Op {
  op: string
  manager?: string
  apiVersion?: string
  object?: unknown
  conflicts?: { manager: string; path: string[] }[]
  parser?: string
}

function operation(n: Node): Op {
  if (n.t !== 'lit') throw new Error('not an operation')
  const op: Op = { op: n.type }
  const m = str(field(n, 'Manager'))
  if (m !== undefined) op.manager = m
  const v = str(field(n, 'APIVersion'))
  if (v !== undefined) op.apiVersion = v
  const o = field(n, 'Object')
  if (o !== undefined) op.object = yamlValue(o)
  const c = field(n, 'Conflicts')
  if (c?.t === 'lit') op.conflicts = c.elems.map((e) => ({ manager: str(field(e.value, 'Manager')) as string, path: path(field(e.value, 'Path') as Node) }))
  const p = field(n, 'Parser')
  if (p?.t === 'id') op.parser = p.v
  return op
}

// ------------------------------------------------------------------ files

interface ParserDef {
  /** The schema (SMD's schema language), parsed from its YAML. */
  schema: unknown
  /** The type every object has; undefined when the type is named by the apiVersion (a bare typed.Parser). */
  root?: string
}

const parsers: Record<string, ParserDef | 'deduced'> = { DeducedParser: 'deduced' }
const cases: unknown[] = []

for (const file of files) {
  const src = git('show', `${commit}:${file}`)
  // Parser variables: `var x = func() ... { parser, err := typed.NewParser(`...`) ... return ... }()`.
  for (const m of src.matchAll(/(\w+)\s*:?=\s*func\(\)[^{]*\{\s*(?:\w+, err|parser, err)\s*:?=\s*typed\.NewParser\(`([^`]*)`\)/g)) {
    const rest = src.slice((m.index ?? 0) + m[0].length)
    const ret = /return ([^\n]*)/.exec(rest)?.[1] ?? ''
    const root = /Type\("([^"]+)"\)/.exec(ret)?.[1]
    parsers[m[1] as string] = root === undefined ? { schema: parseYAML(m[2] as string) } : { schema: parseYAML(m[2] as string), root }
  }
  for (const m of src.matchAll(/map\[string\]TestCase\{/g)) {
    const at = m.index ?? 0
    const fn = [...src.slice(0, at).matchAll(/func (\w+)\(/g)].pop()?.[1] ?? ''
    const p = new GoParser(src, at)
    const table = p.value()
    const after = src.slice(p.pos, src.indexOf('\nfunc ', p.pos) < 0 ? undefined : src.indexOf('\nfunc ', p.pos))
    const run = /\.Test(?:WithConverter)?\((\w+)(?:, ([^)]*\)?))?\)( == nil)?/.exec(after)
    if (table.t !== 'lit') continue
    for (const e of table.elems) {
      const tc = e.value
      const name = str(e.key) as string
      const c: Record<string, unknown> = { id: `${file}:${fn}/${name}`, file, test: fn, name, parser: run?.[1] }
      if (run?.[2] !== undefined) c.converter = run[2]
      if (run?.[3] !== undefined) c.expectError = true
      if (/fmt\.Sprintf/.test(src.slice(at, p.pos))) {
        // Run once per combination of apiVersions (a Go loop around the table): not data.
        c.untranscribed = 'a Go loop runs the table over apiVersion combinations (fmt.Sprintf in its values)'
        cases.push(c)
        continue
      }
      const ops = field(tc, 'Ops')
      c.ops = ops?.t === 'lit' ? ops.elems.map((x) => operation(x.value)) : []
      const obj = field(tc, 'Object')
      if (obj !== undefined) c.object = yamlValue(obj)
      const v = str(field(tc, 'APIVersion'))
      if (v !== undefined) c.apiVersion = v
      const managed = field(tc, 'Managed')
      if (managed?.t === 'lit') {
        const out: Record<string, unknown> = {}
        for (const me of managed.elems) {
          const vs = me.value
          if (vs.t !== 'call') throw new Error('managed: not NewVersionedSet')
          out[str(me.key) as string] = { apiVersion: str(vs.args[1]), applied: (vs.args[2] as { v: string }).v === 'true', set: set(vs.args[0] as Node) }
        }
        c.managed = out
      }
      for (const k of ['IgnoredFields', 'IgnoreFilter'] as const) {
        const f = field(tc, k)
        if (f?.t !== 'lit') continue
        const out: Record<string, unknown> = {}
        for (const fe of f.elems) {
          const sv = fe.value.t === 'call' && fe.value.fn !== '_NS' ? (fe.value.args[0] as Node) : fe.value
          out[str(fe.key) as string] = fe.value.t === 'call' && fe.value.fn !== '_NS' ? { filter: fe.value.fn, set: set(sv) } : set(sv)
        }
        c[k === 'IgnoredFields' ? 'ignoredFields' : 'ignoreFilter'] = out
      }
      if (field(tc, 'ReturnInputOnNoop') !== undefined) c.returnInputOnNoop = true
      cases.push(c)
    }
  }
}

const out = {
  source: { repository: 'https://github.com/kubernetes-sigs/structured-merge-diff', tag, commit, files: files.map((f) => f) },
  parsers,
  cases,
}
const target = join(import.meta.dirname, '..', 'fixtures', 'smd-merge-tables.json')
writeFileSync(target, JSON.stringify(out, null, 1) + '\n')
process.stdout.write(`${cases.length} cases from ${files.length} files at ${tag} (${commit}) → ${target}\n`)

// ------------------------------------------------------------------ typed/ tables

/** `var <name> = []<type>{…}` of a typed/ test file: each case's name, root type, schema and rows. */
function typedTable(file: string, name: string, row: (n: Node) => Record<string, unknown>, rowsField: string): unknown[] {
  const src = git('show', `${commit}:${file}`)
  const at = src.indexOf(`var ${name} = `)
  if (at < 0) throw new Error(`no ${name} in ${file}`)
  const table = new GoParser(src, at + `var ${name} = `.length).value()
  if (table.t !== 'lit') throw new Error(`${name}: not a literal`)
  return table.elems.map((e) => {
    const tc = e.value
    const rows = field(tc, rowsField)
    return {
      name: str(field(tc, 'name')),
      root: str(field(tc, 'rootTypeName')),
      schema: parseYAML(str(field(tc, 'schema')) as string),
      [rowsField]: rows?.t === 'lit' ? rows.elems.map((r) => row(r.value)) : [],
    }
  })
}

/** A document of a row; upstream's YAML reader takes `{"a":{}}}` (a stray brace) as `{"a":{}}`. */
function doc(n: Node | undefined): unknown {
  if (n === undefined) return undefined
  const y = str(n) as string
  try {
    return yamlValue(n)
  } catch (e) {
    if (y.trim().endsWith('}}')) return parseYAML(y.trim().slice(0, -1)) ?? null
    throw e
  }
}
const positional = (n: Node, i: number): Node | undefined => (n.t === 'lit' ? n.elems[i]?.value : undefined)
const typed = {
  source: { repository: 'https://github.com/kubernetes-sigs/structured-merge-diff', tag, commit, files: ['typed/merge_test.go', 'typed/symdiff_test.go'] },
  merge: typedTable('typed/merge_test.go', 'mergeCases', (n) => ({ lhs: doc(positional(n, 0)), rhs: doc(positional(n, 1)), out: doc(positional(n, 2)) }), 'triplets'),
  symdiff: typedTable(
    'typed/symdiff_test.go',
    'symdiffCases',
    (n) => {
      const sets: Record<string, string[][]> = {}
      for (const k of ['removed', 'modified', 'added']) {
        const v = field(n, k)
        sets[k] = v === undefined ? [] : set(v)
      }
      return { lhs: doc(field(n, 'lhs')), rhs: doc(field(n, 'rhs')), ...sets }
    },
    'quints',
  ),
}
const typedTarget = join(import.meta.dirname, '..', 'fixtures', 'smd-typed-tables.json')
writeFileSync(typedTarget, JSON.stringify(typed, null, 1) + '\n')
process.stdout.write(`${typed.merge.length} merge and ${typed.symdiff.length} symdiff cases from typed/ → ${typedTarget}\n`)
