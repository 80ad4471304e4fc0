/**
 * Overlays end to end: the operator, in-process against the sandbox, reconciles Memcacheds that a
 * user applies with real kubectl 1.34 carrying `spec.overlays` — a JSON patch and a strategic
 * merge patch on each workload kind; patches outside the chart's bounds and hostile patches made
 * InvalidSpec (condition and event) with nothing applied; a patch whose test fails after a chart
 * change reported with the previous objects left running; and an overlay removed, after which
 * server-side apply gives the chart's values back (the operator's managed fields no longer hold
 * what the overlay set).
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import YAML from 'yaml'
import { DEFAULT_CHART_DIR, loadChart, type Chart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { kubectlFor } from './support/kubectl.ts'
import { eventually, startLoggedBed } from './support/operator.ts'

type Any = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any
type Condition = { type: string; status: string; reason: string; message: string }

const base = loadChart()
let current: Chart = base
const bed = await startLoggedBed(t, base, () => current, 'silent')
const kubectl = kubectlFor(bed.sandbox.kubeconfigPath)
const crYaml = (name: string, spec: Record<string, unknown>, annotations: Record<string, string> = {}) => YAML.stringify({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name, namespace: 'default', annotations }, spec })
const apply = (name: string, spec: Record<string, unknown>, annotations?: Record<string, string>) => kubectl(['apply', '--server-side', '--field-manager', 'test-user', '-f', '-'], crYaml(name, spec, annotations))
const getJson = async (kind: string, name: string): Promise<Any | undefined> => {
  // The Memcached through the client: a CR holding a 1 MB overlay is more than kubectl's output buffer here.
  if (kind === 'memcached') return (await bed.client.get({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', namespace: 'default', name }).catch(() => undefined)) as Any | undefined
  try {
    return JSON.parse(await kubectl(['get', kind, name, '-n', 'default', '-o', 'json', '--show-managed-fields'])) as Any
  } catch {
    return undefined
  }
}
const condition = (mc: Any | undefined, type: string): Condition | undefined => (mc?.status?.conditions as Condition[] | undefined)?.find((c) => c.type === type)
/** Waits until the CR's status describes its current generation and `ok` holds of it. */
const settled = (name: string, ok: (mc: Any) => boolean, what: string) =>
  eventually(`${name}: ${what}`, async () => {
    const mc = await getJson('memcached', name)
    return mc && mc.status?.observedGeneration === mc.metadata.generation && ok(mc) ? mc : undefined
  })
const ready = (name: string) => settled(name, (mc) => condition(mc, 'Ready')?.status === 'True', 'Ready')
const invalid = (name: string) => settled(name, (mc) => condition(mc, 'Degraded')?.reason === 'InvalidSpec', 'InvalidSpec')
const eventsOf = async (name: string): Promise<Any[]> => (JSON.parse(await kubectl(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.kind=Memcached,involvedObject.name=${name}`, '-o', 'json'])) as Any).items as Any[]
const podSpecOf = (o: Any) => o.spec.template.spec as Any
const memcachedContainer = (o: Any) => (podSpecOf(o).containers as Any[]).find((c) => c.name === 'memcached') as Any

const WORKLOADS = [
  { kind: 'Deployment', resource: 'deployment', spec: { size: 1 } },
  { kind: 'StatefulSet', resource: 'statefulset', spec: { size: 1, workload: { kind: 'StatefulSet' } } },
]

for (const w of WORKLOADS) {
  t.test(`a JSON patch and a strategic merge patch on a ${w.kind}, applied with kubectl`, async (t) => {
    const name = `both-${w.resource}`
    await apply(name, {
      ...w.spec,
      overlays: [
        { name: 'edge-nodes', target: { kind: w.kind }, strategicMerge: { spec: { template: { spec: { tolerations: [{ key: 'edge', operator: 'Exists', effect: 'NoSchedule' }], containers: [{ name: 'memcached', env: [{ name: 'GOMAXPROCS', value: '1' }] }] } } } } },
        { name: 'mirror', target: { group: 'apps', version: 'v1', kind: w.kind, name }, jsonPatch: [{ op: 'test', path: '/spec/template/spec/containers/0/name', value: 'memcached' }, { op: 'replace', path: '/spec/template/spec/containers/0/image', value: 'mirror.example.com/memcached:1.6.38-alpine' }] },
      ],
    })
    await ready(name)
    const o = (await getJson(w.resource, name))!
    t.same(podSpecOf(o).tolerations, [{ key: 'edge', operator: 'Exists', effect: 'NoSchedule' }])
    t.same(memcachedContainer(o).env, [{ name: 'GOMAXPROCS', value: '1' }])
    t.equal(memcachedContainer(o).image, 'mirror.example.com/memcached:1.6.38-alpine')
    const chartOnly = renderInstance(base, { name, namespace: 'default', spec: w.spec }).objects.find((x) => x.kind === w.kind) as Any
    t.same(memcachedContainer(o).securityContext, memcachedContainer(chartOnly).securityContext, 'the secure defaults stay')
    t.same(podSpecOf(o).securityContext, podSpecOf(chartOnly).securityContext)
  })
}

t.test('a patch outside the chart\'s bounds is InvalidSpec naming the patch, the target and the path; nothing is applied', async (t) => {
  await apply('bounds', { size: 1, overlays: [{ name: 'more', target: { kind: 'Deployment' }, jsonPatch: [{ op: 'replace', path: '/spec/replicas', value: 3 }] }] })
  const mc = await invalid('bounds')
  t.match(condition(mc, 'Degraded')?.message, /spec\.overlays\[0\] \(more\): target Deployment\/bounds: spec\.replicas: the chart does not declare it patchable for Deployment/)
  t.equal(await getJson('deployment', 'bounds'), undefined, 'nothing applied')
  const events = await eventually('an InvalidSpec event', async () => (await eventsOf('bounds')).find((e) => e.reason === 'InvalidSpec'))
  t.match(events.message, /spec\.replicas/)
})

t.test('hostile patches are refused with nothing applied', async (t) => {
  const deployment = (strategicMerge: unknown) => ({ target: { kind: 'Deployment' }, strategicMerge })
  const hostile: [string, unknown, RegExp][] = [
    ['privileged', deployment({ spec: { template: { spec: { containers: [{ name: 'memcached', securityContext: { privileged: true } }] } } } }), /no overlay may change spec\.template\.spec\.containers\[\*\]\.securityContext/],
    ['host-network', deployment({ spec: { template: { spec: { hostNetwork: true } } } }), /spec\.template\.spec\.hostNetwork: no overlay may change/],
    ['other-namespace', { target: { kind: 'Deployment', namespace: 'kube-system' }, strategicMerge: { metadata: { annotations: { a: 'b' } } } }, /target namespace "kube-system" is not the instance's namespace "default"/],
    ['cluster-scoped', { target: { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRole' }, strategicMerge: { rules: [] } }, /target kind "ClusterRole" in group "rbac\.authorization\.k8s\.io" is not one the chart renders/],
    ['proto', JSON.parse('{"target":{"kind":"Deployment"},"strategicMerge":{"metadata":{"annotations":{"__proto__":{"x":"y"}}}}}'), /key "__proto__" is not allowed/],
    ['big', deployment({ metadata: { annotations: { big: 'x'.repeat(1 << 20) } } }), /bytes of JSON, more than the 32768 an overlay may have/],
    ['deep', deployment(JSON.parse('{"metadata":{"annotations":{"a":' + '{"a":'.repeat(40) + '1' + '}'.repeat(40) + '}}}')), /nested deeper than 24 levels/],
  ]
  for (const [name, overlay, want] of hostile) {
    const mcName = `hostile-${name}`
    await apply(mcName, { size: 1, overlays: [overlay] })
    const mc = await invalid(mcName)
    t.match(condition(mc, 'Degraded')?.message, want, name)
    for (const kind of ['deployment', 'service', 'serviceaccount']) t.equal(await getJson(kind, mcName), undefined, `${name}: no ${kind} applied`)
  }
  const crb = await kubectl(['get', 'clusterroles', '-o', 'name'])
  t.notMatch(crb, /hostile/, 'no cluster-scoped object touched')
})

t.test('a patch whose test fails after a chart change is reported, and the previous objects are left running', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mc-overlay-chart-'))
  t.teardown(() => {
    current = base
    rmSync(dir, { recursive: true, force: true })
  })
  await apply('upgrade', { size: 1, overlays: [{ name: 'pin-mirror', target: { kind: 'Deployment' }, jsonPatch: [{ op: 'test', path: '/spec/template/spec/containers/0/image', value: 'memcached:1.6.38-alpine' }, { op: 'replace', path: '/spec/template/spec/containers/0/image', value: 'mirror.example.com/memcached:1.6.38-alpine' }] }] })
  await ready('upgrade')
  const before = (await getJson('deployment', 'upgrade'))!
  t.equal(memcachedContainer(before).image, 'mirror.example.com/memcached:1.6.38-alpine')
  cpSync(DEFAULT_CHART_DIR, dir, { recursive: true })
  writeFileSync(join(dir, 'values.yaml'), readFileSync(join(dir, 'values.yaml'), 'utf8').replace('tag: 1.6.38-alpine', 'tag: 1.6.39-alpine'))
  current = loadChart(dir, true)
  // What the sandbox's --watch-chart does when the chart's files change.
  bed.controller.enqueueAll()
  const mc = await eventually('upgrade: the failed test reported', async () => {
    const o = await getJson('memcached', 'upgrade')
    return condition(o, 'Degraded')?.reason === 'InvalidSpec' ? o : undefined
  })
  t.match(condition(mc, 'Degraded')?.message, /spec\.overlays\[0\] \(pin-mirror\): target Deployment\/upgrade: jsonPatch\[0\] \(test \/spec\/template\/spec\/containers\/0\/image\): the test failed/)
  const event = await eventually('an event', async () => (await eventsOf('upgrade')).find((e) => e.reason === 'InvalidSpec' && /pin-mirror/.test(e.message)))
  t.ok(event)
  const after = (await getJson('deployment', 'upgrade'))!
  t.equal(after.metadata.resourceVersion, before.metadata.resourceVersion, 'the Deployment is left as it was')
  t.equal(memcachedContainer(after).image, 'mirror.example.com/memcached:1.6.38-alpine')
})

t.test('removing an overlay gives the chart\'s values back, and the operator no longer owns what it set', async (t) => {
  const overlay = { target: { kind: 'Deployment' }, strategicMerge: { spec: { template: { spec: { tolerations: [{ key: 'edge', operator: 'Exists' }], containers: [{ name: 'memcached', image: 'mirror.example.com/memcached:1.6.38-alpine' }] } } } } }
  await apply('removal', { size: 1, overlays: [overlay] })
  await ready('removal')
  const patched = (await getJson('deployment', 'removal'))!
  t.same(podSpecOf(patched).tolerations, [{ key: 'edge', operator: 'Exists' }])
  const owned = (o: Any): string => JSON.stringify((o.metadata.managedFields as Any[]).find((m) => m.manager === 'memcached-operator' && m.operation === 'Apply')?.fieldsV1)
  t.match(owned(patched), /f:tolerations/, 'the operator owns the overlay\'s field')
  await apply('removal', { size: 1 })
  await ready('removal')
  const restored = await eventually('the chart\'s image back', async () => {
    const o = (await getJson('deployment', 'removal'))!
    return memcachedContainer(o).image === 'memcached:1.6.38-alpine' ? o : undefined
  })
  t.equal(podSpecOf(restored).tolerations, undefined, 'the toleration is gone')
  t.notMatch(owned(restored), /f:tolerations/, 'and no manager holds it')
  t.equal((restored.metadata.managedFields as Any[]).filter((m) => m.manager !== 'memcached-operator' && /tolerations/.test(JSON.stringify(m.fieldsV1))).length, 0)
})

t.test('the CRD refuses an overlay with both patch kinds', async (t) => {
  await t.rejects(apply('both-kinds', { size: 1, overlays: [{ target: { kind: 'Deployment' }, strategicMerge: {}, jsonPatch: [{ op: 'remove', path: '/x' }] }] }), /oneOf/)
  await t.rejects(apply('bad-op', { size: 1, overlays: [{ target: { kind: 'Deployment' }, jsonPatch: [{ op: 'explode', path: '/x' }] }] }), /Unsupported value: "explode"/)
})
