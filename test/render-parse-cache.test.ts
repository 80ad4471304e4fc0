// The parse cache that serves CRs of one spec: a text parsed once with the instance's name and
// namespace as placeholders is reused for other names only when that gives exactly what parsing
// the real text gives. Names that are DNS names and yet YAML 1.1 numbers, booleans or nulls
// (`3`, `y`, `on`, `1e3`, `0x1f`, `12:30`) must be parsed for real where they stand as a whole
// plain scalar; explicit tags, escapes and block headers that hold them, and escaped keys, are never
// served from the cache.
import t from 'tap'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { RenderError } from '../operator/render/errors.ts'
import { clearParseCache, parseCounts, parseManifests } from '../operator/render/manifest.ts'

// The template with a collection as a key makes the YAML library warn once per text: expected here.
const emitWarning = process.emitWarning
process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
  if (String(warning).startsWith('Keys with collection values')) return
  ;(emitWarning as (...a: unknown[]) => void).call(process, warning, ...rest)
}) as typeof process.emitWarning
t.teardown(() => {
  process.emitWarning = emitWarning
})

const NAMES = ['foo', 'int', 'b', 'c'.repeat(90), 'a'.repeat(250), 'mc-1', 'cache', '3', '07', '0x1f', '0b1', '1e3', '1.5', '12-30', 'y', 'n', 'yes', 'no', 'on', 'off', 'true', 'false', 'null', 'a', 'e', 'q', 'qq', 'z', 'inf', 'nan', 'mc.example.com', 'default', 'name', 'space', 'qqzname0qq', 'qqznamespace0qq', 'x-default-y']
const NAMESPACES = ['default', 'team-a', '1', 'on', 'name', 'qq', 'e']

/** Template outputs as functions of the name and namespace, each putting them somewhere YAML reads differently. */
const TEMPLATES: Record<string, (n: string, ns: string) => string> = {
  typical: (n, ns) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${n}\n  namespace: ${ns}\n  labels:\n    app.kubernetes.io/instance: ${n}\n    app: ${n}-memcached\ndata:\n  quoted: "${n}.${ns}.svc"\n  single: '${n}'\n  literal: |\n    server ${n}:11211\n    in ${ns}\n  folded: >-\n    a ${n}\n    b\n  ${n}: key\n  flow: [${n}, ${ns}, "${n}"]\n  map: {${n}: ${ns}}\n  # comment ${n}\n  port: 11211\n`,
  'whole scalars': (n, ns) => `apiVersion: v1\nkind: Thing\nmetadata:\n  name: x\nspec:\n  replicas: ${n}\n  enabled: ${ns}\n  list:\n  - ${n}\n  - ${ns}\n  ${n}: ${ns}\n`,
  'anchor and alias': (n) => `apiVersion: v1\nkind: Thing\nmetadata:\n  name: x\nspec:\n  a: &${n} {k: v}\n  b: *${n}\n`,
  'a tag directive': (n) => `%TAG !${n}! tag:example.com,2000:\n---\napiVersion: v1\nkind: Thing\nmetadata:\n  name: ${n}\nspec:\n  s: !${n}!x text\n`,
  tags: (n) => `apiVersion: v1\nkind: Thing\nmetadata:\n  name: x\nspec:\n  s: !!str ${n}\n  t: !!str 5\n`,
  'escaped double quotes': (n) => `apiVersion: v1\nkind: Thing\nmetadata:\n  name: x\nspec:\n  s: "\\x41${n}\\t${n}"\n`,
  'block header': (n) => `apiVersion: v1\nkind: Thing\nmetadata:\n  name: x\nspec:\n  s: |${n}\n     text\n`,
  'two documents, one empty': (n, ns) => `---\n# only a comment ${n}\n---\napiVersion: v1\nkind: Thing\nmetadata:\n  name: ${n}\n  namespace: ${ns}\n`,
  'duplicate keys for some names': (n) => `apiVersion: v1\nkind: Thing\nmetadata:\n  name: x\nspec:\n  ${n}: 1\n  mc-1: 2\n`,
  'a document that is not a map (an error, never cached)': (n) => `${n}\n`,
  // Found in review: each gave another answer from the cache than from the parse for some name.
  'an escaped key that spells a name': (n) => `apiVersion: v1\nkind: Thing\nmetadata:\n  name: x\ndata:\n  ${n}: a\n  "\\x66oo": b\n`,
  'a tag that holds the name': (n) => `apiVersion: v1\nkind: Thing\nmetadata:\n  name: x\ndata:\n  v: !!${n} 12\n`,
  'a key that holds the name five times': (n) => `apiVersion: v1\nkind: Thing\nmetadata:\n  name: x\ndata:\n  ${n}-${n}-${n}-${n}-${n}: v\n`,
  'a collection as a key': (n) => `apiVersion: v1\nkind: Thing\nmetadata:\n  name: x\ndata:\n  ? [${n}, b]\n  : v\n`,
  // An escaped value that holds no name is the same string for every name (the chart's reload annotation).
  'an escaped value beside the name': (n) => `apiVersion: v1\nkind: Thing\nmetadata:\n  name: ${n}\n  annotations:\n    a: "{\\"port\\":11211,\\"x\\":\\"\\x66oo\\"}"\n    b: "\\x66oo"\ndata:\n  ${n}: a\n`,
  'an escaped value that spells a placeholder': (n) => `apiVersion: v1\nkind: Thing\nmetadata:\n  name: ${n}\ndata:\n  v: "\\x71qzname0qq"\n`,
  'an escaped key that spells no name': (n) => `apiVersion: v1\nkind: Thing\nmetadata:\n  name: ${n}\ndata:\n  "\\x71": a\n`,
  // For `b` the text is `qqzname0b`, whose placeholder text is that of `xzname0qq` for `x`.
  'a placeholder\'s beginning next to the name': (n) => `apiVersion: v1\nkind: Thing\nmetadata:\n  name: x\ndata:\n  v: ${n === 'b' ? 'qqzname0b' : `${n}zname0qq`}\n`,
}

/** Templates the cache must never serve: a placeholder would stand in a tagged scalar, an escaped string, a header; a key is escaped; or the text is an error. */
const NEVER_SERVED = new Set(['an escaped key that spells a name', 'an escaped key that spells no name', 'an escaped value that spells a placeholder', 'a tag that holds the name', 'a collection as a key', 'tags', 'escaped double quotes', 'block header', 'a document that is not a map (an error, never cached)'])

/** What parsing gives, or the error it throws, without the caches. */
function uncached(file: string, text: string): unknown {
  const saved = { ...parseCounts }
  clearParseCache()
  try {
    return parseManifests(file, text)
  } catch (e) {
    return e instanceof RenderError ? { error: e.problems } : { thrown: String(e) }
  } finally {
    clearParseCache()
    Object.assign(parseCounts, saved)
  }
}

function cached(file: string, text: string, name: string, namespace: string): unknown {
  try {
    return parseManifests(file, text, { name, namespace })
  } catch (e) {
    return e instanceof RenderError ? { error: e.problems } : { thrown: String(e) }
  }
}

t.test('every name and namespace parses through the caches as it parses without them', async (t) => {
  for (const [file, template] of Object.entries(TEMPLATES)) {
    const truth = new Map<string, unknown>()
    for (const ns of NAMESPACES) for (const n of NAMES) truth.set(`${n} ${ns}`, uncached(file, template(n, ns)))
    clearParseCache()
    // Twice over every pair: the first round fills the caches (an entry at a text's second sight), the second reads them.
    let mismatches = 0
    for (let round = 0; round < 2; round++) {
      for (const ns of NAMESPACES) {
        for (const n of NAMES) {
          const got = cached(file, template(n, ns), n, ns)
          if (JSON.stringify(got) !== JSON.stringify(truth.get(`${n} ${ns}`))) {
            mismatches++
            t.same(got, truth.get(`${n} ${ns}`), `${file}: name ${JSON.stringify(n)}, namespace ${JSON.stringify(ns)}, round ${round + 1}`)
          }
        }
      }
    }
    t.equal(mismatches, 0, `${file}: ${NAMES.length * NAMESPACES.length} pairs, twice`)
    if (!NEVER_SERVED.has(file)) t.ok(parseCounts.generic > 0, `${file}: ${parseCounts.generic} of them served from the cache`)
  }
})

t.test('the cache serves what it may: a name as part of a string, not a name that reads as a number where it stands alone, nor tagged scalars, escapes or block headers', async (t) => {
  const served = (file: string, names: string[], ns = 'default'): number => {
    clearParseCache()
    for (const n of names) cached(file, TEMPLATES[file]!(n, ns), n, ns)
    return parseCounts.generic
  }
  t.equal(served('typical', ['mc-1', 'mc-2', 'mc-3', 'web', 'cache-b']), 3, 'from the third name of a shape on')
  t.equal(served('typical', ['mc-1', 'mc-2', '3', 'y', 'on', '1e3']), 0, 'a name that is a number or a boolean where it stands alone is parsed')
  t.equal(served('whole scalars', ['mc-1', 'mc-2', 'mc-3']), 1, 'but another name of letters is served')
  for (const file of NEVER_SERVED) t.equal(served(file, file === 'block header' ? ['1', '2', '3', '4'] : ['mc-1', 'mc-2', 'mc-3', 'mc-4']), 0, `${file}: never served`)
})

t.test('objects served from the cache are the caller\'s own', async (t) => {
  clearParseCache()
  const text = (n: string) => TEMPLATES.typical!(n, 'default')
  for (const n of ['a1', 'a2']) parseManifests('t', text(n), { name: n, namespace: 'default' })
  const first = parseManifests('t', text('a3'), { name: 'a3', namespace: 'default' })
  ;(first[0]!.metadata.labels as Record<string, string>).app = 'changed'
  const second = parseManifests('t', text('a4'), { name: 'a4', namespace: 'default' })
  t.equal(parseCounts.generic, 2)
  t.equal(second[0]!.metadata.labels?.app, 'a4-memcached')
  t.equal(second[0]!.metadata.name, 'a4')
})

t.test('the chart: CRs of one spec in many namespaces render as without the cache, the parse served from the third on', async (t) => {
  const chart = loadChart()
  const specs = [{ size: 3 }, { size: 1, memoryMB: 128, serviceAccount: { create: true } }]
  const truth = new Map<string, unknown>()
  const inputs: { name: string; namespace: string; spec: unknown }[] = []
  for (const spec of specs) for (const ns of ['default', 'team-a', 'on']) for (const name of ['mc-1', 'mc-2', 'cache', '3', 'y', 'memcached', 'mc-3']) inputs.push({ name, namespace: ns, spec })
  for (const input of inputs) {
    clearParseCache()
    truth.set(JSON.stringify(input), renderInstance(chart, input).objects)
  }
  clearParseCache()
  for (const input of inputs) t.same(renderInstance(chart, input).objects, truth.get(JSON.stringify(input)), `${input.namespace}/${input.name} ${JSON.stringify(input.spec)}`)
  t.ok(parseCounts.generic > 0, `served from the cache: ${parseCounts.generic}, parsed: ${parseCounts.parsed}`)
})
