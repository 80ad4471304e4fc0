import fc from 'fast-check'
import t from 'tap'
import YAML from 'yaml'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { RenderError } from '../operator/render/errors.ts'
import { Raw, yamlScalar } from '../operator/render/scalar.ts'

const chart = loadChart()
/** An assertion name that keeps TAP output on one line. */
const label = (s: string): string => JSON.stringify(s).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
const parse11 = (text: string): unknown => YAML.parse(text, { version: '1.1', uniqueKeys: true })

// Strings that break naive interpolation into YAML.
const HOSTILE = [
  'on', 'yes', 'No', 'off', 'y', 'null', '~', '0644', '1e3', '.inf', '0x1F', '12:30', '2024-01-01',
  'a: b', 'a:b', '#comment', 'a #b', '"quoted"', "'single'", '{{ .Values.x }}', '<% evil %>', '<%= x %>',
  'line1\nline2', 'x\n  injected: true', 'x\ninjected: true', '- item', '[a, b]', '{a: b}', '&anchor', '*alias',
  '!!python/object', '|', '>', '---', '...', '%YAML 1.1', '@at', '`tick`', ' leading', 'trailing ', '\t', '\\',
  '\u2028', '\u0085', '\ufeff', '\u007f', 'é ünïcödé 🎉', '\ud800', '',
]

t.test('yamlScalar: any string reads back as exactly itself (YAML 1.1)', async (t) => {
  for (const s of HOSTILE) t.same(parse11(`k: ${yamlScalar(s)}\n`), { k: s }, label(s))
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (s) => {
      const back = parse11(`k: ${yamlScalar(s)}\nnext: 1\n`) as Record<string, unknown>
      return back.k === s && back.next === 1 && Object.keys(back).length === 2
    }),
    { numRuns: 3000 },
  )
  t.pass('3000 generated strings read back unchanged')
})

t.test('yamlScalar: any JSON value reads back equal, in any position', async (t) => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 3 }), (v) => {
      const back = parse11(`k: ${yamlScalar(v)}\nlist:\n  - ${yamlScalar(v)}\n`) as Record<string, unknown>
      const expected = JSON.parse(JSON.stringify(v))
      return JSON.stringify(back.k) === JSON.stringify(expected) && JSON.stringify((back.list as unknown[])[0]) === JSON.stringify(expected)
    }),
    { numRuns: 2000 },
  )
  t.equal(yamlScalar(1e-7), '1.0e-7', 'a YAML 1.1 float needs a dot')
  t.equal(yamlScalar(null), 'null')
  t.equal(yamlScalar(new Raw('raw: text')), 'raw: text', 'only helpers write raw text')
})

/** Every path to a leaf (keys of maps, indexes of lists). */
function keyPaths(v: unknown, prefix = ''): string[] {
  if (Array.isArray(v)) return v.flatMap((x, i) => keyPaths(x, `${prefix}[${i}]`))
  if (v !== null && typeof v === 'object') return Object.entries(v).flatMap(([k, x]) => keyPaths(x, `${prefix}.${JSON.stringify(k)}`))
  return [prefix]
}

/** A spec with `s` in every string value the schema lets through unrestricted. */
function specWith(s: string): Record<string, unknown> {
  return {
    size: 2,
    image: `memcached${s}`,
    extraArgs: [s, `-o${s}`],
    podAnnotations: { 'example.com/a': s, 'example.com/b': `${s}${s}` },
    nodeSelector: { 'kubernetes.io/os': s },
    priorityClassName: `p${s}`,
    tolerations: [{ key: s, operator: 'Equal', value: s, effect: 'NoSchedule' }],
    affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: s, operator: 'In', values: [s] }] }] } } },
    topologySpreadConstraints: [{ maxSkew: 1, topologyKey: `zone${s}`, whenUnsatisfiable: 'ScheduleAnyway' }],
    serviceAccount: { create: true, annotations: { 'example.com/role': s } },
    service: { annotations: { 'example.com/svc': s } },
  }
}

const benign = renderInstance(chart, { name: 'inj', namespace: 'default', spec: specWith('benign') })
const benignPaths = benign.objects.map((o) => keyPaths(o).sort())

function checkInjection(s: string): string | undefined {
  const r = renderInstance(chart, { name: 'inj', namespace: 'default', spec: specWith(s) })
  const dep = r.objects.find((o) => o.kind === 'Deployment') as any
  const pod = dep.spec.template.spec
  const problems: string[] = []
  const same = (label: string, a: unknown, b: unknown): void => {
    if (JSON.stringify(a) !== JSON.stringify(b)) problems.push(`${label}: ${JSON.stringify(a)} != ${JSON.stringify(b)}`)
  }
  same('image', pod.containers[0].image, `memcached${s}`)
  same('args', pod.containers[0].args.slice(-2), [s, `-o${s}`])
  same('annotations', dep.spec.template.metadata.annotations, { 'example.com/a': s, 'example.com/b': `${s}${s}` })
  same('nodeSelector', pod.nodeSelector, { 'kubernetes.io/os': s })
  same('priorityClassName', pod.priorityClassName, `p${s}`)
  same('tolerations', pod.tolerations, [{ key: s, operator: 'Equal', value: s, effect: 'NoSchedule' }])
  same('affinity', pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0], { key: s, operator: 'In', values: [s] })
  same('spread', pod.topologySpreadConstraints[0].topologyKey, `zone${s}`)
  same('sa', r.objects.find((o) => o.kind === 'ServiceAccount')!.metadata.annotations, { 'example.com/role': s })
  same('svc', r.objects.find((o) => o.kind === 'Service')!.metadata.annotations, { 'example.com/svc': s })
  // No key anywhere that the template did not write.
  same('key paths', r.objects.map((o) => keyPaths(o).sort()), benignPaths)
  return problems.length > 0 ? problems.join('; ') : undefined
}

t.test('injection attempts in every string value stay inside one scalar', async (t) => {
  for (const s of HOSTILE) t.equal(checkInjection(s), undefined, label(s))
})

t.test('property: no generated string adds a key or changes a value', async (t) => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 30 }), (s) => checkInjection(s) === undefined),
    { numRuns: 300 },
  )
  t.pass('300 generated strings changed nothing')
})

/** An annotation key as the API server accepts it (IsQualifiedName of the lower-cased key). */
function validAnnotationKey(key: string): boolean {
  const parts = key.toLowerCase().split('/')
  if (parts.length > 2) return false
  const name = parts.at(-1)!
  const prefix = parts.length === 2 ? parts[0]! : undefined
  const nameOk = name.length > 0 && name.length <= 63 && /^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$/.test(name)
  const prefixOk = prefix === undefined || (prefix.length > 0 && prefix.length <= 253 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(prefix))
  return nameOk && prefixOk
}

t.test('property: hostile annotation keys stay keys, or the render is refused naming exactly the keys the API server would refuse', async (t) => {
  const key = fc.oneof(fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }), fc.stringMatching(/^([a-z0-9]{1,8}(\.[a-z0-9]{1,8}){0,2}\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?$/))
  let kept = 0
  let refused = 0
  fc.assert(
    fc.property(fc.dictionary(key, fc.string({ maxLength: 10 }), { maxKeys: 4 }), (annotations) => {
      const bad = Object.keys(annotations).filter((k) => !validAnnotationKey(k))
      let r: ReturnType<typeof renderInstance>
      try {
        r = renderInstance(chart, { name: 'inj', namespace: 'default', spec: { size: 1, podAnnotations: annotations } })
      } catch (err) {
        refused++
        if (!(err instanceof RenderError) || err.kind !== 'guard') return false
        return JSON.stringify(err.problems) === JSON.stringify(bad.map((k) => `templates/deployment.ejs: Deployment/inj: invalid annotation key ${JSON.stringify(k)} (pod template)`))
      }
      kept++
      const dep = r.objects.find((o) => o.kind === 'Deployment') as any
      const got = dep.spec.template.metadata.annotations ?? {}
      return bad.length === 0 && JSON.stringify(Object.entries(got).sort()) === JSON.stringify(Object.entries(annotations).sort())
    }),
    { numRuns: 300 },
  )
  t.ok(kept > 30 && refused > 30, `both outcomes generated (${kept} kept exactly, ${refused} refused with their keys named)`)
})

t.test('property: any spec either renders valid objects or is refused with located problems', async (t) => {
  const arbSpec = fc.record(
    {
      size: fc.oneof(fc.integer({ min: -2, max: 5 }), fc.string({ maxLength: 3 })),
      port: fc.oneof(fc.integer({ min: -1, max: 70000 }), fc.constant('x')),
      image: fc.oneof(fc.string({ maxLength: 20 }), fc.record({ repository: fc.string({ maxLength: 8 }), tag: fc.string({ maxLength: 8 }) }, { requiredKeys: [] }), fc.integer()),
      extraArgs: fc.array(fc.oneof(fc.string({ maxLength: 8 }), fc.integer()), { maxLength: 3 }),
      podLabels: fc.dictionary(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 }), { maxKeys: 2 }),
      podDisruptionBudget: fc.record({ enabled: fc.boolean(), maxUnavailable: fc.oneof(fc.integer({ min: -1, max: 3 }), fc.constantFrom('50%', 'x')) }, { requiredKeys: [] }),
      junk: fc.jsonValue({ maxDepth: 1 }),
    },
    { requiredKeys: [] },
  )
  const located = /^(spec(\.|\[|:)|templates\/[^:]+:\d+: |(templates\/[^:]+\.ejs: )?(ServiceAccount|Service|Deployment|PodDisruptionBudget)\/)/
  fc.assert(
    fc.property(arbSpec, (spec) => {
      try {
        const r = renderInstance(chart, { name: 'prop', namespace: 'default', spec })
        return r.objects.length >= 2 && r.objects.every((o) => o.metadata.namespace === 'default')
      } catch (err) {
        if (!(err instanceof RenderError)) throw err
        return err.problems.length > 0 && err.problems.every((p) => located.test(p))
      }
    }),
    { numRuns: 1000 },
  )
  t.pass('1000 generated specs rendered or refused with located problems')
})
