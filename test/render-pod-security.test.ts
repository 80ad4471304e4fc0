/**
 * The memcached pods' security context: secure by default, a user and group that a platform may
 * assign instead (OpenShift's restricted-v2 SCC refuses a fixed UID outside the namespace's range),
 * and nothing a spec can weaken.
 */
import t from 'tap'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { RenderError } from '../operator/render/errors.ts'
import { chartWith } from './support/chart.ts'
import { eventually, startBed } from './support/operator.ts'

const chart = loadChart()
type Pod = { securityContext: Record<string, unknown>; containers: { securityContext: Record<string, unknown> }[] }
const podOf = (spec: Record<string, unknown>): Pod => {
  const deployment = renderInstance(chart, { name: 'cache', namespace: 'team', spec }).objects.find((o) => o.kind === 'Deployment') as unknown as { spec: { template: { spec: Pod } } }
  return deployment.spec.template.spec
}
const refusal = (spec: Record<string, unknown>): string[] => {
  try {
    renderInstance(chart, { name: 'cache', namespace: 'team', spec })
  } catch (err) {
    if (err instanceof RenderError) return err.problems
    throw err
  }
  return []
}
const fixedContainer = { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, capabilities: { drop: ['ALL'] } }

t.test('by default the pods run as the image\'s memcache user, 11211, non-root, RuntimeDefault seccomp', async (t) => {
  const pod = podOf({ size: 1 })
  t.same(pod.securityContext, { runAsNonRoot: true, runAsUser: 11211, runAsGroup: 11211, seccompProfile: { type: 'RuntimeDefault' } })
  t.same(pod.containers[0]?.securityContext, fixedContainer)
})

t.test('null user and group leave them to the platform (OpenShift); runAsNonRoot and the rest stay', async (t) => {
  const pod = podOf({ size: 1, podSecurityContext: { runAsUser: null, runAsGroup: null } })
  t.same(pod.securityContext, { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } })
  t.same(pod.containers[0]?.securityContext, fixedContainer)
  t.same(podOf({ size: 1, podSecurityContext: { runAsUser: 1000700000 } }).securityContext.runAsUser, 1000700000, 'or another UID')
})

t.test('a spec cannot make the pods root or add fields to the security context', async (t) => {
  t.same(refusal({ size: 1, podSecurityContext: { runAsUser: 0 } }), ['spec.podSecurityContext.runAsUser: must be >= 1 (got 0)'])
  t.same(refusal({ size: 1, podSecurityContext: { runAsGroup: -1 } }), ['spec.podSecurityContext.runAsGroup: must be >= 1 (got -1)'])
  t.same(refusal({ size: 1, podSecurityContext: { privileged: true } }), ['spec.podSecurityContext.privileged: unknown field'])
})

t.test('through the API server: a CR with null user and group keeps them null, and its pods pass restricted Pod Security', async (t) => {
  const bed = await startBed({ sandbox: { podReadyDelayMs: 10 } })
  t.teardown(() => bed.stop())
  await bed.client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'openshift-like', labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } })
  const cr = await bed.client.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'cache', namespace: 'openshift-like' }, spec: { size: 2, podSecurityContext: { runAsUser: null, runAsGroup: null } } })
  t.same((cr.spec as Record<string, unknown>).podSecurityContext, { runAsUser: null, runAsGroup: null }, 'nullable: the server keeps the nulls')
  const pods = await eventually('two running pods', async () => {
    const list = await bed.client.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: 'openshift-like' })
    return list.items.length === 2 ? list.items : undefined
  })
  for (const p of pods) t.same((p.spec as { securityContext: unknown }).securityContext, { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } })
})

t.test('platform openshift: the chart’s platforms/openshift.yaml leaves user and group to the SCC; a spec may still set them', async (t) => {
  const render = (spec: Record<string, unknown>, platform?: string) =>
    (renderInstance(chart, { name: 'cache', namespace: 'team', spec, ...(platform ? { platform } : {}) }).objects.find((o) => o.kind === 'Deployment') as unknown as { spec: { template: { spec: Pod } } }).spec.template.spec
  t.same(render({ size: 1 }, 'openshift').securityContext, { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } })
  t.same(render({ size: 1 }, 'openshift').containers[0]?.securityContext, fixedContainer, 'the rest of the security context stays')
  t.same(render({ size: 1, podSecurityContext: { runAsUser: 1000680000 } }, 'openshift').securityContext, { runAsNonRoot: true, runAsUser: 1000680000, seccompProfile: { type: 'RuntimeDefault' } }, 'the spec is above the platform')
  t.same(render({ size: 1 }, 'kubernetes').securityContext.runAsUser, 11211, 'a platform the chart has no file for changes nothing')
})

t.test('a platform file must be a map of values; one that is not is named in the error', async (t) => {
  const dir = chartWith({ 'platforms/openshift.yaml': '- runAsUser\n' })
  t.throws(() => loadChart(dir), { name: 'RenderError', message: /platforms\/openshift\.yaml: must be a map/ })
  const invalid = loadChart(chartWith({ 'platforms/openshift.yaml': 'podSecurityContext:\n  runAsUser: 0\n' }))
  t.throws(() => renderInstance(invalid, { name: 'cache', namespace: 'team', spec: {}, platform: 'openshift' }), RenderError, 'its values meet the schema like any other')
  t.same(Object.keys(loadChart(chartWith({ 'platforms/openshift.yaml': null })).platforms), [], 'a chart without platform files has none')
})
