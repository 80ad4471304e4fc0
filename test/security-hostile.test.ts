/**
 * Hostile CR names and specs through the real API server path (the sandbox's CRD validation,
 * defaulting and pruning over HTTP) and then through the operator, in this process so that a
 * prototype reached by any of it would show here:
 * - every generated CR is either refused by the API server with an error naming the field, or
 *   stored; a stored one either renders into objects of exactly the template's shape (no key a
 *   value smuggled in) or is refused by the render with problems that name their place;
 * - a sample of them is really created: each ends Degraded with a located message and nothing
 *   applied, or with its children equal to its render; the operator neither crashes nor leaks a
 *   rejection, and a good CR created after all of them still converges.
 */
import fc from 'fast-check'
import t from 'tap'
import { ApiError, type KubeObject } from '../operator/controller/client.ts'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { RenderError } from '../operator/render/errors.ts'
import { diffObject } from '../operator/reconcile/diff.ts'
import type { JsonMap } from '../operator/reconcile/normalize.ts'
import { stampOwner } from '../operator/reconcile/owner.ts'
import type { MemcachedObject } from '../operator/reconcile/reconciler.ts'
import { startBed } from './support/operator.ts'
import { MC, exists, memcached, notConverged, snapshot, statusOf } from './fixtures/reliability/support.ts'

const SEED = Number(process.env.HOSTILE_SEED ?? 20261121)
const RUNS = Number(process.env.HOSTILE_RUNS ?? 1500)
const CREATED = Number(process.env.HOSTILE_CREATED ?? 40)
const chart = loadChart()

// Strings that break naive interpolation into YAML, templates or property paths.
const HOSTILE = [
  'on', 'yes', 'null', '~', '0644', '1e3', '12:30', 'a: b', '#c', 'a #b', '"q"', "'s'", '{{ .Values.x }}', '<% evil %>', '<%= x %>', '<%- x %>',
  'x\n  injected: true', 'x\ninjected: true', '- item', '[a, b]', '{a: b}', '&anchor', '*alias', '!!python/object', '|', '>', '---', '...',
  '\t', '\\', '\u2028', '\u0085', '\ufeff', 'é🎉', '', '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '${process.exit(1)}',
  '$(reboot)', '`id`', 'a'.repeat(70), '../../etc/passwd', 'memcached:1.6; rm -rf /', 'x\u0000y',
]
const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', '__defineGetter__']
const hostileString = fc.oneof(fc.constantFrom(...HOSTILE), fc.string({ unit: 'binary', maxLength: 24 }))
const hostileKey = fc.oneof(fc.constantFrom(...PROTO_KEYS, 'example.com/ok', 'ok', 'a: b', 'x\ny', 'UPPER', '-x'), fc.string({ unit: 'binary', minLength: 1, maxLength: 16 }))
const hostileMap = fc.dictionary(hostileKey, fc.oneof(hostileString, fc.constantFrom('a', 'b-1', 'x.y')), { maxKeys: 3 })
const hostileValue = fc.oneof(hostileString, fc.integer(), fc.boolean(), fc.constant(null), fc.jsonValue({ maxDepth: 2 }))

/** Mostly `good`, sometimes `bad`: a spec with every field hostile is always refused by the schema, which proves little. */
const mostly = <T, U>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<U>): fc.Arbitrary<T | U> => fc.oneof({ arbitrary: good, weight: 6 }, { arbitrary: bad, weight: 1 })
// Strings the schema lets through where it has no pattern, and label values it accepts.
const freeString = fc.oneof(fc.constantFrom(...HOSTILE.filter((h) => h !== '' && h.length < 64)), fc.string({ minLength: 1, maxLength: 24 }))
const labelValue = fc.stringMatching(/^[A-Za-z0-9]([-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?$/)
const labelKey = fc.oneof(fc.constantFrom(...PROTO_KEYS.filter((k) => /^[A-Za-z0-9_]+$/.test(k)), 'example.com/ok', 'ok', 'app.kubernetes.io/instance', 'app.kubernetes.io/managed-by'), fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/))

const arbName = fc.oneof(
  { arbitrary: fc.stringMatching(/^[a-z][a-z0-9-]{0,20}[a-z0-9]$/), weight: 4 },
  { arbitrary: fc.stringMatching(/^[a-z0-9]([a-z0-9.-]{0,90}[a-z0-9])?$/), weight: 2 },
  { arbitrary: fc.constantFrom('__proto__', 'constructor', 'toString', 'a..b', 'UPPER', '-x', 'x_y', 'a/b', '1abc', 'a'.repeat(64), 'a'.repeat(253), 'a'.repeat(254), 'x.' + 'y'.repeat(70)), weight: 1 },
  { arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 30 }), weight: 1 },
)

const arbSpec = fc.record(
  {
    size: mostly(fc.integer({ min: 0, max: 3 }), fc.oneof(fc.integer({ min: -3, max: 1003 }), hostileValue)),
    image: mostly(fc.oneof(freeString, fc.record({ repository: freeString, tag: fc.oneof(fc.constantFrom('1.6', 'latest'), freeString) }, { requiredKeys: [] })), fc.oneof(hostileValue, fc.record({ repository: hostileString, tag: hostileString, digest: hostileString, pullPolicy: hostileString }, { requiredKeys: [] }))),
    port: mostly(fc.integer({ min: 1024, max: 65_535 }), hostileValue),
    extraArgs: mostly(fc.array(freeString, { maxLength: 3 }), hostileValue),
    podLabels: mostly(fc.dictionary(labelKey, labelValue, { maxKeys: 3 }), fc.oneof(hostileMap, hostileValue)),
    podAnnotations: mostly(fc.dictionary(labelKey, freeString, { maxKeys: 3 }), hostileMap),
    nodeSelector: mostly(fc.dictionary(labelKey, labelValue, { maxKeys: 2 }), hostileMap),
    resources: mostly(fc.record({ requests: fc.record({ cpu: fc.constantFrom('100m', '0.5', '1'), memory: fc.constantFrom('64Mi', '1G', '100M') }, { requiredKeys: [] }) }, { requiredKeys: [] }), fc.record({ requests: fc.dictionary(fc.constantFrom('cpu', 'memory', 'x'), hostileString), limits: hostileValue }, { requiredKeys: [] })),
    priorityClassName: mostly(fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/), hostileString),
    tolerations: mostly(fc.array(fc.record({ key: labelKey, operator: fc.constant('Equal'), value: labelValue, effect: fc.constant('NoSchedule') }), { maxLength: 2 }), fc.array(fc.record({ key: hostileString, operator: fc.constantFrom('Equal', 'Exists', 'x'), value: hostileString, effect: fc.constantFrom('NoSchedule', 'x') }, { requiredKeys: [] }), { maxLength: 2 })),
    serviceAccount: mostly(fc.record({ create: fc.boolean(), annotations: fc.dictionary(labelKey, freeString, { maxKeys: 2 }) }, { requiredKeys: [] }), fc.record({ create: hostileValue, name: hostileString, annotations: hostileMap }, { requiredKeys: [] })),
    podDisruptionBudget: mostly(fc.record({ enabled: fc.boolean(), maxUnavailable: fc.constantFrom(1, 2, '50%') }, { requiredKeys: [] }), fc.record({ enabled: hostileValue, maxUnavailable: fc.oneof(fc.integer({ min: -1, max: 3 }), hostileString) }, { requiredKeys: [] })),
    service: mostly(fc.record({ headless: fc.boolean(), annotations: fc.dictionary(labelKey, freeString, { maxKeys: 2 }) }, { requiredKeys: [] }), fc.record({ headless: hostileValue, annotations: hostileMap }, { requiredKeys: [] })),
    unknownField: hostileValue,
  },
  { requiredKeys: ['size'] },
)

/** An own `__proto__` key (not the prototype), as JSON.parse of a request body makes it. */
function withProtoKey(map: Record<string, unknown>, value: unknown): void {
  Object.defineProperty(map, '__proto__', { value, enumerable: true, configurable: true, writable: true })
}

/** The spec as JSON text, with `__proto__` keys in it (at the top and in the label maps) when asked. */
function specJson(spec: Record<string, unknown>, protoKeys: boolean): string {
  const copy = JSON.parse(JSON.stringify(spec)) as Record<string, unknown>
  if (protoKeys) {
    withProtoKey(copy, { polluted: 'spec' })
    for (const k of ['podLabels', 'podAnnotations']) {
      const m = copy[k]
      if (m !== null && typeof m === 'object' && !Array.isArray(m)) withProtoKey(m as Record<string, unknown>, { polluted: 'map' })
    }
  }
  return JSON.stringify(copy)
}

/** Every path to a leaf (keys of maps, indexes of lists). */
function keyPaths(v: unknown, prefix = ''): string[] {
  if (Array.isArray(v)) return v.flatMap((x, i) => keyPaths(x, `${prefix}[${i}]`))
  if (v !== null && typeof v === 'object') return Object.entries(v).flatMap(([k, x]) => keyPaths(x, `${prefix}.${JSON.stringify(k)}`))
  return [prefix]
}

/** The same data with every non-empty string value replaced by a plain word (map keys kept). */
function tame(v: unknown): unknown {
  if (typeof v === 'string') return v === '' ? '' : 'x'
  if (Array.isArray(v)) return v.map(tame)
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, tame(x)]))
  return v
}

// A guard's refusal names the template, then the object (`templates/deployment.ejs: Deployment/x: …`).
const LOCATED_RENDER = /^(spec(\.|\[|:)|templates\/[^:]+:\d+: |(templates\/[^:]+: )?(ServiceAccount|ConfigMap|Service|Deployment|PodDisruptionBudget)\/)/
const LOCATED_API = /(metadata\.(name|labels|annotations)|spec(\.[A-Za-z_]|\[|:| in body| Invalid| must))/

/** A condition message: one located problem, or `N problems:` and one located problem a line. */
function located(message: string): boolean {
  const lines = message.split('\n')
  const list = /^\d+ problems:$/.test(lines[0] ?? '') ? lines.slice(1).map((l) => l.replace(/^\s*- /, '')) : lines.slice(0, 1)
  return list.length > 0 && list.every((l) => LOCATED_RENDER.test(l))
}

/** What the operator must make of a stored spec, judged by the render alone. */
function renderVerdict(name: string, spec: unknown): { ok: true; objects: number } | { ok: false; kind: string; problems: string[] } {
  try {
    const r = renderInstance(chart, { name, namespace: 'default', spec: spec as Record<string, unknown> })
    return { ok: true, objects: r.objects.length }
  } catch (err) {
    if (!(err instanceof RenderError)) throw err
    return { ok: false, kind: err.kind, problems: err.problems }
  }
}

const pristinePrototype = () => Object.getOwnPropertyNames(Object.prototype).sort().join(',')

t.test('hostile names and specs through the API server, the render and the operator', async (t) => {
  const prototypeBefore = pristinePrototype()
  const unhandled: unknown[] = []
  const onUnhandled = (err: unknown) => unhandled.push(err)
  process.on('unhandledRejection', onUnhandled)
  t.teardown(() => void process.off('unhandledRejection', onUnhandled))
  const bed = await startBed({ concurrency: 4 })
  t.teardown(() => bed.stop())

  // 1. Thousands through the API server's validation (dry run) and the render.
  const stats = { refusedByApi: 0, refusedByRender: 0, rendered: 0 }
  const accepted: { name: string; json: string; kind: string }[] = []
  const failures: string[] = []
  await fc.assert(
    fc.asyncProperty(arbName, arbSpec, fc.boolean(), async (name, spec, protoInMaps) => {
      const json = specJson(spec, protoInMaps)
      const body = JSON.parse(`{"apiVersion":"${MC.apiVersion}","kind":"${MC.kind}","metadata":{"name":${JSON.stringify(name)},"namespace":"default"},"spec":${json}}`) as KubeObject
      let stored: KubeObject
      try {
        stored = await bed.client.create(body, { dryRun: true })
      } catch (err) {
        if (!(err instanceof ApiError) || ![400, 422].includes(err.status)) throw err
        if (!LOCATED_API.test(err.message)) failures.push(`API error without a field: ${err.message}`)
        stats.refusedByApi++
        return failures.length === 0
      }
      const verdict = renderVerdict(stored.metadata.name!, stored.spec)
      if (!verdict.ok) {
        stats.refusedByRender++
        const unlocated = verdict.problems.filter((p) => !LOCATED_RENDER.test(p))
        if (unlocated.length > 0) failures.push(`render problems without a place: ${unlocated.join('; ')}`)
      } else {
        stats.rendered++
        const r = renderInstance(chart, { name: stored.metadata.name!, namespace: 'default', spec: stored.spec as Record<string, unknown> })
        let benign: ReturnType<typeof renderInstance> | undefined
        try {
          benign = renderInstance(chart, { name: stored.metadata.name!, namespace: 'default', spec: tame(stored.spec) as Record<string, unknown> })
        } catch {
          benign = undefined // a tamed value may be invalid (a pattern); the shape check needs both
        }
        if (benign && JSON.stringify(r.objects.map((o) => keyPaths(o).sort())) !== JSON.stringify(benign.objects.map((o) => keyPaths(o).sort()))) failures.push(`a value changed the shape of the render: ${json}`)
        if (r.objects.some((o) => o.metadata.namespace !== 'default')) failures.push(`an object outside the namespace: ${json}`)
      }
      // A sample of both kinds is created for real below.
      const kind = verdict.ok ? 'rendered' : 'refused'
      if (accepted.filter((a) => a.kind === kind).length < CREATED / 2 && !accepted.some((a) => a.name === stored.metadata.name)) accepted.push({ name: stored.metadata.name!, json: JSON.stringify(stored.spec), kind })
      return failures.length === 0
    }),
    { numRuns: RUNS, seed: SEED },
  )
  t.same(failures, [], `${RUNS} generated CRs: ${stats.refusedByApi} refused by the API server, ${stats.refusedByRender} by the render, ${stats.rendered} rendered`)
  t.ok(stats.refusedByApi > 0 && stats.refusedByRender > 0 && stats.rendered > 0, 'all three outcomes were generated')
  t.equal(pristinePrototype(), prototypeBefore, 'Object.prototype untouched')
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'no polluted property on plain objects')

  // 2. A sample really created; the in-process operator reconciles each.
  for (const a of accepted) {
    const spec = JSON.parse(a.json) as Record<string, unknown>
    // Keep the cluster small: the size is not what is under test here.
    if (typeof spec.size === 'number' && spec.size > 2) spec.size = 2
    await bed.client.create(JSON.parse(`{"apiVersion":"${MC.apiVersion}","kind":"${MC.kind}","metadata":{"name":${JSON.stringify(a.name)},"namespace":"default"},"spec":${JSON.stringify(spec)}}`) as KubeObject)
  }
  await bed.client.create(memcached('good-after', { size: 2 }))
  const outcomes = { degraded: 0, converged: 0 }
  const deadline = Date.now() + 45_000
  const pending = new Set([...accepted.map((a) => a.name), 'good-after'])
  const why = new Map<string, string>()
  while (pending.size > 0 && Date.now() < deadline) {
    const { crs, children } = await snapshot(bed.client)
    for (const cr of crs) {
      const name = cr.metadata.name!
      if (!pending.has(name)) continue
      const s = statusOf(cr)
      if (s.observedGeneration !== cr.metadata.generation) continue
      const verdict = renderVerdict(name, cr.spec)
      const degraded = s.conditions?.find((c) => c.type === 'Degraded')
      if (!verdict.ok) {
        const reason = { values: 'InvalidSpec', guard: 'ObjectRefused' }[verdict.kind] ?? 'TemplateError'
        if (degraded?.status === 'True' && degraded.reason === reason && located(degraded.message)) {
          if (await exists(bed.client, { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name })) t.fail(`${name}: refused but a Deployment exists`)
          pending.delete(name)
          outcomes.degraded++
        } else why.set(name, `want Degraded ${reason}, have ${JSON.stringify(degraded)}`)
        continue
      }
      if (degraded?.status === 'True' && degraded.reason === 'ApplyFailed' && LOCATED_API.test(degraded.message)) {
        // Rendered, but the API server refused an object: the field is named, and it is retried.
        pending.delete(name)
        outcomes.degraded++
        continue
      }
      const desired = stampOwner(renderInstance(chart, { name, namespace: 'default', spec: cr.spec as Record<string, unknown> }).objects, cr as MemcachedObject)
      const diffs = desired.map((d) => diffObject(d as unknown as JsonMap, children.get(`${d.kind}/default/${d.metadata.name}`) as unknown as JsonMap | undefined)).filter((d) => !d.equal)
      if (diffs.length === 0 && degraded?.status === 'False') {
        pending.delete(name)
        outcomes.converged++
      } else why.set(name, `${diffs.length} objects differ; Degraded ${JSON.stringify(degraded)}`)
    }
    if (pending.size > 0) await new Promise((r) => setTimeout(r, 200))
  }
  t.same([...pending].map((n) => `${n}: ${why.get(n) ?? 'not observed'}`), [], `every created CR ended refused with a located message or equal to its render (${outcomes.degraded} refused, ${outcomes.converged} applied)`)
  const { crs, children, pods } = await snapshot(bed.client)
  const good = crs.find((c) => c.metadata.name === 'good-after')!
  t.equal(await notConverged(bed.client, chart, good, pods, children), undefined, 'a good CR created after the hostile ones converged, pods and all')
  t.same(unhandled, [], 'no unhandled rejection')
  t.ok(bed.controller.hasSynced(), 'the operator is alive')
  t.equal(pristinePrototype(), prototypeBefore, 'Object.prototype still untouched after the operator reconciled them')
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'no polluted property')
})
