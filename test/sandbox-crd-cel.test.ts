/**
 * The CRD refuses what the operator would refuse: the chart's cross-field rules are the CRD's
 * x-kubernetes-validations, so real `kubectl apply` of a bad Memcached fails at once, with the
 * message the operator's InvalidSpec gives; the sandbox runs rules as kube-apiserver does
 * (apiextensions-apiserver pkg/registry/customresource/strategy.go and
 * pkg/apiserver/schema/cel/validation.go): on create, update, patch and apply, transition rules on
 * updates only, ratcheting of unchanged fields, and a rule that does not compile refuses its CRD.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { parse as parseYaml, parseAllDocuments } from 'yaml'
import { memcachedCRD } from '../operator/api/crd.ts'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { RenderError } from '../operator/render/errors.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import type { KubeObject } from '../operator/sandbox/types.ts'
import { kubectlFor } from './support/kubectl.ts'

const root = join(import.meta.dirname, '..')
const chart = loadChart()
const sb = await startSandbox({ controllers: false, installCRDs: [memcachedCRD(chart) as KubeObject] })
t.teardown(() => sb.close())
const kubectl = kubectlFor(sb.kubeconfigPath)

/** kubectl's stderr and exit code for a command that must fail. */
async function refused(args: string[], input?: string): Promise<{ code: number; stderr: string }> {
  try {
    await kubectl(args, input)
  } catch (err) {
    const e = err as { code: number; stderr: string }
    return { code: e.code, stderr: e.stderr }
  }
  throw new Error(`kubectl ${args.join(' ')} succeeded`)
}
const memcached = (name: string, spec: Record<string, unknown>) => JSON.stringify({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name, namespace: 'default' }, spec })
/** What the operator's render says of a spec: the problems of its InvalidSpec condition. */
function invalidSpec(spec: Record<string, unknown>, name = 'bad'): string[] {
  try {
    renderInstance(chart, { name, namespace: 'default', spec })
  } catch (err) {
    if (err instanceof RenderError && err.kind === 'values') return err.problems
    throw err
  }
  return []
}

t.test('kubectl apply of a CR that breaks a cross-field rule fails at once, with the message InvalidSpec gives', async (t) => {
  const cases: { spec: Record<string, unknown>; type: string }[] = [
    { spec: { size: 1, workload: { kind: 'StatefulSet' }, service: { headless: false } }, type: 'Invalid value' },
    { spec: { size: 1, memoryMB: 1024, resources: { limits: { memory: '1100Mi' } } }, type: 'Invalid value' },
    { spec: { size: 1, lifecycle: { preStopSleepSeconds: 30 } }, type: 'Invalid value' },
    { spec: { size: 1, workload: { strategy: { type: 'Recreate', rollingUpdate: { maxSurge: 1 } } } }, type: 'Forbidden' },
    { spec: { size: 1, auth: { enabled: true } }, type: 'Required value' },
    { spec: { size: 1, maxItemSize: '3m', memoryMB: 4 }, type: 'Invalid value' },
  ]
  for (const { spec, type } of cases) {
    const [problem, ...more] = invalidSpec(spec)
    t.same(more, [], 'one problem')
    const [field, detail] = [problem!.slice(0, problem!.indexOf(': ')), problem!.slice(problem!.indexOf(': ') + 2)]
    const r = await refused(['apply', '-f', '-'], memcached('bad', spec))
    t.equal(r.code, 1)
    t.equal(r.stderr, `The Memcached "bad" is invalid: ${field}: ${type}: ${detail}\n`, JSON.stringify(spec))
  }
  const several = { size: 1, workload: { kind: 'StatefulSet' }, service: { headless: false }, auth: { enabled: true } }
  t.equal((await refused(['apply', '--server-side', '-f', '-'], memcached('bad', several))).stderr, [
    'The Memcached "bad" is invalid: ',
    `* spec.service.headless: Invalid value: must be true when spec.workload.kind is StatefulSet (the pods' stable DNS names come from the headless Service)`,
    '* spec.auth.secretName: Required value: is required when spec.auth.enabled is true',
    '',
  ].join('\n'), 'every broken rule at once, by server-side apply too')
  t.same(invalidSpec(several), [
    `spec.service.headless: must be true when spec.workload.kind is StatefulSet (the pods' stable DNS names come from the headless Service)`,
    'spec.auth.secretName: is required when spec.auth.enabled is true',
  ])
  t.equal((await refused(['apply', '-f', '-'], memcached('bad', { size: 'three', auth: { enabled: true } }))).stderr, [
    'The Memcached "bad" is invalid: ',
    '* spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"',
    '* <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation',
    '',
  ].join('\n'), 'a type error blocks the rules (strategy.go hasBlockingErr)')
  const gone = await refused(['get', 'memcached', 'bad'])
  t.match(gone.stderr, /memcacheds.cache.example.com "bad" not found/, 'nothing was stored')
})

t.test('a merge patch that lowers the memory limit below what memcached needs is refused (the finding\'s reproduction)', async (t) => {
  await kubectl(['apply', '-f', '-'], memcached('patched', { size: 1, memoryMB: 512 }))
  const r = await refused(['patch', 'mc', 'patched', '--type', 'merge', '-p', '{"spec":{"resources":{"limits":{"memory":"64Mi"}}}}'])
  t.equal(r.stderr, `The Memcached "patched" is invalid: spec.resources.limits.memory: Invalid value: must be at least 593Mi: spec.memoryMB (512) + 48Mi for memcached's hash table once full of small items + 1Mi for spec.maxConnections (1024) + 32Mi for the process (got "64Mi"); leave it out to get exactly that\n`)
  const live = JSON.parse(await kubectl(['get', 'mc', 'patched', '-o', 'json'])) as KubeObject
  t.same(live['spec'], { size: 1, memoryMB: 512 }, 'unchanged')
  t.equal(live.metadata.generation, 1)
  await kubectl(['patch', 'mc', 'patched', '--type', 'merge', '-p', '{"spec":{"resources":{"limits":{"memory":"1Gi"}}}}'])
  await kubectl(['delete', 'mc', 'patched'])
})

t.test('quantity maps refuse a mistyped resource name and a value that is not a quantity', async (t) => {
  const limts = await refused(['apply', '-f', '-'], memcached('q', { size: 1, resources: { limts: { memory: '1Gi' } } }))
  t.match(limts.stderr, /strict decoding error: unknown field "spec\.resources\.limts"/)
  const memroy = await refused(['apply', '-f', '-'], memcached('q', { size: 1, resources: { limits: { memroy: '1Gi' } } }))
  t.match(memroy.stderr, /strict decoding error: unknown field "spec\.resources\.limits\.memroy"/)
  t.same(invalidSpec({ size: 1, resources: { limits: { memroy: '1Gi' } } }), ['spec.resources.limits.memroy: unknown field'], 'the render says the same')
  const gix = await refused(['apply', '-f', '-'], memcached('q', { size: 1, resources: { requests: { memory: '1Gix' } }, metrics: { resources: { limits: { cpu: 'lots' } } } }))
  t.equal(gix.stderr, [
    'The Memcached "q" is invalid: ',
    '* spec.metrics.resources.limits.cpu: Invalid value: "lots": must be a Kubernetes quantity such as 512Mi, 1Gi, 500m or 2 (got "lots")',
    '* spec.resources.requests.memory: Invalid value: "1Gix": must be a Kubernetes quantity such as 512Mi, 1Gi, 500m or 2 (got "1Gix")',
    '',
  ].join('\n'))
  await kubectl(['apply', '-f', '-'], memcached('q', { size: 1, resources: { requests: { cpu: '250m', memory: 268435456, 'ephemeral-storage': '1Gi', 'hugepages-2Mi': '0' } } }))
  await kubectl(['delete', 'mc', 'q'])
})

t.test('no false refusals: every sample and every ci/ values file of the chart is accepted', async (t) => {
  const samples = readdirSync(join(root, 'kustomize/samples')).filter((f) => f.startsWith('cache_'))
  t.ok(samples.length >= 3)
  for (const f of samples) {
    const out = await kubectl(['apply', '--dry-run=server', '-f', join(root, 'kustomize/samples', f)])
    t.match(out, /created \(server dry run\)/, f)
    for (const doc of parseAllDocuments(readFileSync(join(root, 'kustomize/samples', f), 'utf8'))) t.same(invalidSpec((doc.toJS() as KubeObject)['spec'] as Record<string, unknown>, (doc.toJS() as KubeObject).metadata.name), [], `${f} renders`)
  }
  const ci = readdirSync(join(root, 'charts/memcached/ci')).filter((f) => f.endsWith('-values.yaml'))
  t.ok(ci.length >= 9)
  for (const f of ci) {
    const spec = { size: 1, ...(parseYaml(readFileSync(join(root, 'charts/memcached/ci', f), 'utf8')) as Record<string, unknown>) }
    const out = await kubectl(['apply', '--dry-run=server', '-f', '-'], memcached(f.replace('-values.yaml', ''), spec))
    t.match(out, /created \(server dry run\)/, f)
  }
})

const widgetCRD = (rules: Record<string, unknown>) => JSON.stringify({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.example.com' },
  spec: {
    group: 'example.com',
    names: { kind: 'Widget', plural: 'widgets', singular: 'widget', listKind: 'WidgetList' },
    scope: 'Namespaced',
    versions: [{
      name: 'v1', served: true, storage: true,
      schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { name: { type: 'string', ...rules['name'] as object }, size: { type: 'integer', ...rules['size'] as object } } } } } },
    }],
  },
})
const widget = (spec: Record<string, unknown>) => JSON.stringify({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w', namespace: 'default' }, spec })

t.test('transition rules run on updates only, and an unchanged field that breaks a new rule is ratcheted', async (t) => {
  await kubectl(['apply', '-f', '-'], widgetCRD({ name: { 'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'is immutable' }] } }))
  await kubectl(['wait', '--for=condition=Established', 'crd/widgets.example.com', '--timeout=30s'])
  await kubectl(['apply', '-f', '-'], widget({ name: 'a', size: 10 }))
  t.equal((await refused(['apply', '-f', '-'], widget({ name: 'b', size: 10 }))).stderr, 'The Widget "w" is invalid: spec.name: Invalid value: "b": is immutable\n')
  await kubectl(['apply', '-f', '-'], widget({ name: 'a', size: 11 }))
  // A rule added later: the stored size breaks it, but an update that leaves size alone passes.
  await kubectl(['apply', '-f', '-'], widgetCRD({ name: { 'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'is immutable' }] }, size: { 'x-kubernetes-validations': [{ rule: 'self <= 5' }] } }))
  await kubectl(['label', 'widget', 'w', 'touched=yes'])
  t.equal((await refused(['patch', 'widget', 'w', '--type', 'merge', '-p', '{"spec":{"size":12}}'])).stderr, 'The Widget "w" is invalid: spec.size: Invalid value: 12: failed rule: self <= 5\n')
  await kubectl(['patch', 'widget', 'w', '--type', 'merge', '-p', '{"spec":{"size":5}}'])
  await kubectl(['delete', 'crd', 'widgets.example.com'])
})

t.test('a CRD whose rule does not compile is refused at creation', async (t) => {
  const r = await refused(['apply', '-f', '-'], widgetCRD({ name: { 'x-kubernetes-validations': [{ rule: 'self ==' }, { rule: 'self.size() > 0', fieldPath: '.nothing' }] } }))
  t.equal(r.stderr, [
    'The CustomResourceDefinition "widgets.example.com" is invalid: ',
    '* spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[name].x-kubernetes-validations[1].fieldPath: Invalid value: ".nothing": must be a valid path',
    '* spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[name].x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self ==","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}: compilation failed: ERROR: <input>:1:8: Syntax error: Unexpected token: EOF',
    ' | self ==',
    ' | .......^',
    '',
  ].join('\n'))
  t.match((await refused(['get', 'crd', 'widgets.example.com'])).stderr, /not found/, 'not created')
})
