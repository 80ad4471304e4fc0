import t from 'tap'
import { loadChart } from '../operator/render/chart.ts'
import { resolveValues } from '../operator/render/engine.ts'
import { RenderError } from '../operator/render/errors.ts'
import { specPath } from '../operator/render/schema.ts'

const chart = loadChart()
const problems = (spec: unknown): string[] => {
  try {
    resolveValues(chart, { name: 'x', namespace: 'default', spec })
    return []
  } catch (err) {
    if (err instanceof RenderError && err.kind === 'values') return err.problems
    throw err
  }
}

t.test('valid specs produce no problem', async (t) => {
  t.same(problems({ size: 0 }), [])
  t.same(problems({ size: 3, image: 'memcached:1.6.38', podDisruptionBudget: { maxUnavailable: '50%' } }), [])
  t.same(problems({ size: 3, image: { repository: 'r', digest: `sha256:${'a'.repeat(64)}` }, resources: { limits: { cpu: 1, memory: '1Gi' } } }), [])
})

t.test('every error is reported, each with its path', async (t) => {
  const found = problems({
    size: -1,
    port: 'eleven',
    memoryMB: 0,
    szie: 3,
    image: 5,
    extraArgs: [1],
    podDisruptionBudget: { maxUnavailable: true },
    tolerations: [{ effect: 'Sometimes' }],
    resources: { limits: { memory: 'lots' } },
    serviceAccount: { create: 'yes', name: 'Bad_Name' },
    service: { headless: 'no' },
  })
  t.same(found.sort(), [
    'spec.extraArgs[0]: must be string (got 1)',
    'spec.image: must be string or object (got 5)',
    'spec.memoryMB: must be >= 1 (got 0)',
    'spec.podDisruptionBudget.maxUnavailable: must be an integer or a string (got true)',
    'spec.port: must be integer (got "eleven")',
    'spec.resources.limits.memory: must be a Kubernetes quantity such as 512Mi, 1Gi, 500m or 2 (got "lots")',
    'spec.service.headless: must be boolean (got "no")',
    'spec.serviceAccount.create: must be boolean (got "yes")',
    'spec.serviceAccount.name: must match pattern "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$" (got "Bad_Name")',
    'spec.size: must be >= 0 (got -1)',
    'spec.szie: unknown field',
    'spec.tolerations[0].effect: must be one of "NoSchedule", "PreferNoSchedule", "NoExecute" (got "Sometimes")',
  ])
})

t.test('an unknown field inside a map that the CRD keeps open only for its string-or-map type is reported (spec.image.tagg)', async (t) => {
  t.same(problems({ size: 1, image: { repository: 'memcached', tagg: '1.6.39' } }), ['spec.image.tagg: unknown field'])
  t.same(problems({ size: 1, image: 'memcached:1.6.39' }), [], 'the string form is still accepted')
  const spread = { maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', minDomains: 2, matchLabelKeys: ['pod-template-hash'] }
  t.same(problems({ size: 1, topologySpreadConstraints: [spread] }), [], 'a pass-through of a Kubernetes type stays open to its other fields')
})

t.test('a missing size is reported as required', async (t) => {
  t.same(problems({}), ['spec.size: is required'])
})

t.test('a spec that is not a map is refused', async (t) => {
  t.same(problems([1]), ['spec: must be a map, not a list'])
  t.same(problems('size: 3'), ['spec: must be a map'])
})

t.test('duplicate list-map keys are refused like the API server does', async (t) => {
  const c = { maxSkew: 1, topologyKey: 'zone', whenUnsatisfiable: 'DoNotSchedule' }
  t.same(problems({ size: 1, topologySpreadConstraints: [c, { ...c, maxSkew: 2 }] }), [
    'spec.topologySpreadConstraints: must not contain duplicate keys (topologyKey, whenUnsatisfiable): ["zone","DoNotSchedule"]',
  ])
})

t.test('odd keys are bracketed in paths', async (t) => {
  t.equal(specPath('/podLabels/a.b~1c'), 'spec.podLabels["a.b/c"]')
  t.equal(specPath('/tolerations/0/key'), 'spec.tolerations[0].key')
  t.equal(specPath('', 'size'), 'spec.size')
})

t.test('a long offending value is shortened in the message', async (t) => {
  const [p] = problems({ size: 1, priorityClassName: 'x'.repeat(300) })
  t.match(p, /^spec\.priorityClassName: must NOT have more than 253 characters \(got "x{56}\.\.\.\)$/)
})
