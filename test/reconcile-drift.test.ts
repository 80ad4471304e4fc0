/**
 * Drift modes and pause, without a server: which fields are drift (server-side apply ownership),
 * how live values are kept at a path (keyed list items, atomic lists), and the status of a paused CR.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { memcachedCRD } from '../operator/api/crd.ts'
import { runCli } from '../operator/cli/program.ts'
import { DEFAULT_CHART_DIR, loadChart } from '../operator/render/chart.ts'
import { chartWith } from './support/chart.ts'
import { captureIO } from './support/io.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import type { RenderedObject } from '../operator/render/manifest.ts'
import { chartValuesOf, OPERATOR_SPEC_FIELDS } from '../operator/render/spec-fields.ts'
import { driftedPaths, driftMessage, driftSpecOf, ignoredPaths, keepLive, managersOf, owns, pointerSegments } from '../operator/reconcile/drift.ts'
import { isPaused, pausedStatus, resumedCondition } from '../operator/reconcile/pause.ts'
import { PRIORITY, updatePriority } from '../operator/reconcile/controller.ts'

const desired: RenderedObject = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'x', namespace: 'default' },
  spec: { replicas: 2, template: { spec: { containers: [{ name: 'memcached', image: 'memcached:1', args: ['-m', '64'] }, { name: 'exporter', image: 'exporter:1' }] } } },
}
const ours = {
  'f:spec': { 'f:replicas': {}, 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"memcached"}': { '.': {}, 'f:name': {}, 'f:args': {} }, 'k:{"name":"exporter"}': { '.': {}, 'f:name': {}, 'f:image': {} } } } } },
}
function live(spec: unknown, managed: unknown[] = [{ manager: 'memcached-operator', operation: 'Apply', fieldsV1: ours }]): KubeObject {
  return { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x', namespace: 'default', uid: 'u', managedFields: managed as never }, spec } as KubeObject
}

t.test('JSON pointers are read as RFC 6901 says', async (t) => {
  t.same(pointerSegments('/metadata/annotations/a~1b~0c'), ['metadata', 'annotations', 'a/b~c'])
})

t.test('ownership: fields, list-map items by key, and what is below an atomic list or map', async (t) => {
  t.ok(owns(ours, ['spec', 'replicas']))
  t.ok(owns(ours, ['spec', 'template', 'spec', 'containers', '[name="exporter"]', 'image']))
  t.notOk(owns(ours, ['spec', 'template', 'spec', 'containers', '[name="memcached"]', 'image']), 'the memcached image is not in our set: somebody took it')
  t.ok(owns(ours, ['spec', 'template', 'spec', 'containers', '[name="memcached"]', 'args', '1']), 'an atomic list is owned whole')
  t.notOk(owns(undefined, ['spec']))
})

t.test('drift is a changed value the operator no longer owns; a new render of an owned field is not', async (t) => {
  const changed = live({ replicas: 3, template: { spec: { containers: [{ name: 'memcached', image: 'memcached:evil', args: ['-m', '64'] }, { name: 'exporter', image: 'exporter:0' }] } } })
  t.same(driftedPaths(desired, changed), [['spec', 'template', 'spec', 'containers', '[name="memcached"]', 'image']], 'replicas and the exporter image are ours: a new render')
  t.same(driftedPaths(desired, live({}, [])), [], 'no entry of ours: nothing is known to be drift')
  const full = live({}, [
    { manager: 'memcached-operator', operation: 'Apply', fieldsV1: ours },
    { manager: 'kubectl-set', operation: 'Update', fieldsV1: { 'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"memcached"}': { 'f:image': {} } } } } } } },
    { manager: 'kubelet', operation: 'Update', subresource: 'status', fieldsV1: { 'f:spec': { 'f:template': {} } } },
  ])
  t.same(managersOf(full, ['spec', 'template', 'spec', 'containers', '[name="memcached"]', 'image']), ['kubectl-set'])
  t.equal(driftMessage([{ what: 'Deployment default/x', kind: 'Deployment', field: '.spec.replicas', managers: [] }]), 'left as they are (spec.drift.mode warn): Deployment default/x .spec.replicas (changed by another manager)')
})

t.test('keeping live values: a field, a keyed item\'s field, an atomic list, and a field the live object lacks', async (t) => {
  const current = live({ replicas: 5, template: { spec: { containers: [{ name: 'exporter', image: 'exporter:1' }, { name: 'memcached', image: 'memcached:hot', args: ['-m', '128', '-v'] }] } } })
  const kept = keepLive(desired, current, [['spec', 'replicas'], ['spec', 'template', 'spec', 'containers', '[name="memcached"]', 'image'], ['spec', 'template', 'spec', 'containers', '[name="memcached"]', 'args', '1'], ['spec', 'paused'], ['spec', 'template', 'spec', 'containers', '[name="gone"]']])
  const spec = kept.spec as { replicas: number; template: { spec: { containers: { name: string; image: string; args?: string[] }[] } } }
  t.equal(spec.replicas, 5)
  t.same(spec.template.spec.containers[0], { name: 'memcached', image: 'memcached:hot', args: ['-m', '128', '-v'] })
  t.equal((desired.spec as { replicas: number }).replicas, 2, 'the rendered object is not modified')
  const noReplicas = keepLive(desired, live({ template: {} }), [['spec', 'replicas']])
  t.notOk(Object.hasOwn(noReplicas.spec as object, 'replicas'), 'a value the live object does not have is left out')
  t.equal(keepLive(desired, current, []), desired)
  const notOurs = keepLive(desired, current, [['spec', 'replicas']], () => false)
  t.notOk(Object.hasOwn(notOurs.spec as object, 'replicas'), 'a path somebody else owns is left out of the apply, not taken back')
})

t.test('spec.drift: mode, ignore rules by target; the chart never sees it', async (t) => {
  t.equal(driftSpecOf({ size: 1 }), undefined)
  const spec = driftSpecOf({ drift: { mode: 'warn', ignore: [{ paths: ['/spec/replicas'], target: { kind: 'Deployment' } }, { paths: ['/data/x'], target: { kind: 'ConfigMap', name: 'other' } }, { paths: ['/metadata/labels/team'] }] } })!
  t.equal(spec.mode, 'warn')
  t.same(ignoredPaths(spec, desired), [['spec', 'replicas'], ['metadata', 'labels', 'team']])
  t.equal(driftSpecOf({ drift: {} })?.mode, 'correct')
  t.same(chartValuesOf({ size: 1, drift: { mode: 'warn' } }), { size: 1 })
  const plain = { size: 1 }
  t.equal(chartValuesOf(plain), plain, 'a spec without operator fields is passed as it is')
  t.ok(OPERATOR_SPEC_FIELDS.drift, 'drift is an operator field')
})

t.test('a paused CR: Paused True and Ready False Paused over what it said; resumed, Paused False only if it had one', async (t) => {
  const now = new Date('2026-11-28T10:00:00Z')
  const cr = { metadata: { generation: 3, annotations: { 'memcached.cache.example.com/paused': 'true' } }, status: { observedGeneration: 2, readyReplicas: 1, conditions: [{ type: 'Ready', status: 'True' as const, reason: 'Reconciled', message: 'ok', lastTransitionTime: '2026-11-28T09:00:00Z' }] } }
  t.ok(isPaused(cr))
  t.notOk(isPaused({ metadata: { annotations: { 'memcached.cache.example.com/paused': 'yes' } } }), 'only "true" pauses')
  const { status, announce } = pausedStatus(cr, now)
  t.ok(announce, 'it was not paused before: announced')
  t.notOk(pausedStatus({ ...cr, status }, now).announce, 'already paused: not again')
  t.equal(status.observedGeneration, 2, 'the generation last reconciled stays')
  t.match(status.conditions, [{ type: 'Ready', status: 'False', reason: 'Paused', observedGeneration: 3, lastTransitionTime: '2026-11-28T10:00:00Z' }, { type: 'Paused', status: 'True', reason: 'Paused' }])
  t.equal(resumedCondition({ metadata: {}, status: { conditions: [] } }), undefined)
  t.match(resumedCondition({ metadata: {}, status }), { type: 'Paused', status: 'False', reason: 'Resumed' })
})

t.test('pausing, resuming and allowing a mass prune are reconciled at once, though they move no generation', async (t) => {
  const cr = (annotations: Record<string, string>) => ({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'x', generation: 1, annotations } }) as KubeObject
  t.equal(updatePriority(cr({}), cr({ 'memcached.cache.example.com/paused': 'true' })), PRIORITY.changed)
  t.equal(updatePriority(cr({ 'memcached.cache.example.com/paused': 'true' }), cr({})), PRIORITY.changed)
  t.equal(updatePriority(cr({}), cr({ 'memcached.cache.example.com/allow-mass-prune': '1' })), PRIORITY.changed)
  t.equal(updatePriority(cr({}), cr({ 'example.com/other': 'x' })), undefined, 'another annotation reconciles nothing')
})

t.test('the CRD declares spec.drift beside the chart\'s values; lint refuses a chart value of an operator field\'s name', async (t) => {
  const crd = memcachedCRD(loadChart()) as { spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, { properties?: Record<string, unknown> }> } } } } }[] } }
  const spec = crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties
  t.ok(spec.size, 'the chart\'s values')
  t.same(Object.keys(spec.drift?.properties ?? {}), ['mode', 'ignore'])
  const schema = JSON.parse(readFileSync(join(DEFAULT_CHART_DIR, 'values.schema.json'), 'utf8')) as { properties: Record<string, unknown> }
  schema.properties.drift = { type: 'object', description: 'a value of the chart' }
  const io = captureIO()
  t.equal(await runCli(['lint', '--chart', chartWith({ 'values.schema.json': JSON.stringify(schema) })], io), 1)
  t.match(io.err(), /values\.schema\.json: properties\.drift: "drift" is a field of the Memcached spec that the operator reads itself/)
})
