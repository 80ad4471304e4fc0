/**
 * What README.md and docs/values.md claim about the chart and the samples is what the chart and
 * the samples do: the production sample the README shows, the alerts table, the memory table,
 * the refusals shown as console blocks, and the values the Bitnami table names.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import YAML from 'yaml'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { RenderError } from '../operator/render/errors.ts'

const root = join(import.meta.dirname, '..')
const chart = loadChart()
const read = (f: string) => readFileSync(join(root, f), 'utf8')
const values = read('docs/values.md')
const render = (spec: Record<string, unknown>) => renderInstance(chart, { name: 'cache', namespace: 'team', spec: { size: 3, ...spec } }).objects

/** Whether `part` is contained in `whole`: every key of a map with a contained value, arrays equal. */
function within(part: unknown, whole: unknown): boolean {
  if (part !== null && typeof part === 'object' && !Array.isArray(part)) {
    if (whole === null || typeof whole !== 'object' || Array.isArray(whole)) return false
    return Object.entries(part).every(([k, v]) => within(v, (whole as Record<string, unknown>)[k]))
  }
  return JSON.stringify(part) === JSON.stringify(whole)
}

t.test('the README\'s production snippet is part of the production sample', async (t) => {
  const readme = read('README.md')
  const at = readme.indexOf('(kustomize/samples/cache_v1alpha1_memcached_production.yaml)')
  t.ok(at > 0, 'the README links the production sample')
  const block = /```yaml\n([\s\S]*?)```/.exec(readme.slice(at))![1]!
  const shown = YAML.parse(block) as { spec: Record<string, unknown> }
  const sample = YAML.parse(read('kustomize/samples/cache_v1alpha1_memcached_production.yaml')) as { spec: Record<string, unknown> }
  t.ok(within(shown.spec, sample.spec), `every value shown is in the sample: ${JSON.stringify(shown.spec)}`)
  for (const key of ['tls', 'networkPolicy', 'auth']) t.notOk(key in sample.spec, `the README says the sample has no ${key}`)
})

t.test('docs/values.md\'s alerts table is the chart\'s default rules', async (t) => {
  const rows = [...values.matchAll(/^ {2}\| (Memcached\w+) \| .* \| (\d+m) \| (critical|warning) \|$/gm)].map((m) => [m[1], m[2], m[3]])
  const rule = render({ metrics: { enabled: true, prometheusRule: { enabled: true } } }).find((o) => o.kind === 'PrometheusRule') as unknown as { spec: { groups: { rules: { alert: string; for: string; labels: { severity: string } }[] }[] } }
  t.same(rows, rule.spec.groups[0]!.rules.map((r) => [r.alert, r.for, r.labels.severity]))
  const extstoreRows = [...values.matchAll(/^\| (MemcachedExtstore\w+) \| .* \| (\d+m) \| (critical|warning) \|$/gm)].map((m) => [m[1], m[2], m[3]])
  const withExtstore = render({ extstore: { enabled: true }, metrics: { enabled: true, prometheusRule: { enabled: true } } }).find((o) => o.kind === 'PrometheusRule') as unknown as typeof rule
  t.same(extstoreRows, withExtstore.spec.groups[0]!.rules.slice(rows.length).map((r) => [r.alert, r.for, r.labels.severity]), 'and the extstore table the rules extstore adds')
})

t.test('docs/values.md\'s memory table is what the chart renders', async (t) => {
  const rows = [...values.matchAll(/^\| (\d+)(, (\d+) TLS connections)? \| [^|]+ \| [^|]+ \| [^|]+ \| (\d+Mi) \|/gm)]
  t.ok(rows.length >= 4)
  for (const m of rows) {
    const spec = m[3] ? { memoryMB: Number(m[1]), maxConnections: Number(m[3]), tls: { enabled: true, secretName: 'mc-tls' } } : { memoryMB: Number(m[1]) }
    const c = (render(spec).find((o) => o.kind === 'Deployment') as unknown as { spec: { template: { spec: { containers: { resources: { requests: { memory: string }; limits: { memory: string } } }[] } } } }).spec.template.spec.containers[0]!
    t.same([c.resources.requests.memory, c.resources.limits.memory], [m[4], m[4]], m[0])
  }
})

t.test('each refusal docs/values.md shows is the chart\'s message for a spec', async (t) => {
  const specs: Record<string, unknown>[] = [
    { workload: { kind: 'StatefulSet' }, service: { headless: false } },
    { memoryMB: 1024, resources: { limits: { memory: '1100Mi' } } },
    { maxItemSize: '700k' },
    { extstore: { enabled: true, volume: { type: 'ephemeral', size: '1Gi' } } },
  ]
  const messages = specs.map((spec) => {
    try {
      render(spec)
      return ''
    } catch (err) {
      return err instanceof RenderError ? err.problems.join('\n') : String(err)
    }
  })
  const shown = [...values.matchAll(/```console\n(spec\.[\s\S]*?)\n```/g)].map((m) => m[1])
  t.ok(shown.length >= 3)
  for (const s of shown) t.ok(messages.includes(s!), s!)
})

t.test('every value the Bitnami table names is one of the chart\'s', async (t) => {
  const schema = JSON.parse(read('charts/memcached/values.schema.json')) as { properties: Record<string, unknown> }
  const has = (path: string): boolean => {
    let node: unknown = schema
    for (const part of path.split('.')) {
      const props = (node as { properties?: Record<string, unknown> }).properties
      if (!props || !(part in props)) return false
      node = props[part]
    }
    return true
  }
  const start = values.indexOf('| Bitnami 8.0.0 | here | notes |')
  const end = values.indexOf('\n## ', start)
  const table = values.slice(start, end < 0 ? undefined : end)
  const names = table.split('\n').filter((l) => l.startsWith('| ')).slice(2).flatMap((l) => {
    const here = l.split(' | ')[1] ?? ''
    let previous = ''
    return [...here.matchAll(/`([a-zA-Z.{},]+)`/g)].flatMap((m) => {
      // `{a,b}` alone lists the keys of the value named before it.
      const brace = /^([\w.]*)\{([\w,]+)\}$/.exec(m[1]!)
      const out = brace ? brace[2]!.split(',').map((x) => (brace[1] || `${previous}.`) + x) : [m[1]!]
      if (!brace) previous = m[1]!
      return out
    })
  })
  t.ok(names.length > 30, `${names.length} names`)
  for (const n of names) t.ok(has(n), n)
})
