/**
 * Drift modes (spec.drift, after Flux helm-controller's driftDetection) against the sandbox, with
 * real kubectl changing the objects as a user would: `correct` applies the render back, `warn`
 * leaves the change and names the field manager that made it (Drifted condition, Warning event,
 * metric), `ignore` paths are never corrected — and a change of the render is applied in every mode.
 */
import t from 'tap'
import type { KubeObject } from '../operator/controller/client.ts'
import { appliedFields } from '../operator/reconcile/diff.ts'
import { managersOf, owns } from '../operator/reconcile/drift.ts'
import { kubectlFor } from './support/kubectl.ts'
import { eventually, startBed } from './support/operator.ts'

const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', namespace: 'default' } as const
const DEPLOY = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default' } as const
type Condition = { type: string; status: string; reason: string; message: string }
const condition = (o: KubeObject, type: string) => ((o.status ?? {}) as { conditions?: Condition[] }).conditions?.find((c) => c.type === type)
type DeploymentSpec = { replicas: number; template: { spec: { containers: { name: string; image: string }[] } } }

const bed = await startBed({ resyncPeriodMs: 500 })
t.teardown(() => bed.stop())
const { client } = bed
const kubectl = kubectlFor(bed.sandbox.kubeconfigPath)

async function converged(name: string, spec: Record<string, unknown>): Promise<void> {
  await client.create({ ...MC, metadata: { name, namespace: 'default' }, spec })
  await eventually(`${name} ready`, async () => {
    const cr = await client.get({ ...MC, name })
    return cr.status && (cr.status as { observedGeneration?: number }).observedGeneration === cr.metadata.generation && condition(cr, 'Ready')?.status === 'True' ? true : undefined
  }, 60_000)
}
const spec = async (name: string) => (await client.get({ ...DEPLOY, name })).spec as DeploymentSpec

t.test('correct (the default): a field kubectl changed is applied back', async (t) => {
  await converged('corrected', { size: 1 })
  await kubectl(['set', 'image', 'deployment/corrected', 'memcached=memcached:drifted'])
  await eventually('corrected', async () => ((await spec('corrected')).template.spec.containers[0]!.image === 'memcached:1.6.38-alpine' ? true : undefined))
  t.equal(condition(await client.get({ ...MC, name: 'corrected' }), 'Drifted'), undefined, 'a CR never in warn mode has no Drifted condition')
})

t.test('warn: the change stays, the CR names the field and the manager that changed it, and a new render is still applied', async (t) => {
  await converged('warned', { size: 1, drift: { mode: 'warn' } })
  await kubectl(['set', 'image', 'deployment/warned', 'memcached=memcached:drifted'])
  const cr = await eventually('drift reported', async () => {
    const o = await client.get({ ...MC, name: 'warned' })
    return condition(o, 'Drifted')?.status === 'True' ? o : undefined
  })
  t.match(condition(cr, 'Drifted'), { reason: 'DriftDetected', message: 'left as they are (spec.drift.mode warn): Deployment default/warned .spec.template.spec.containers[name="memcached"].image (changed by kubectl-set)' })
  t.equal((await spec('warned')).template.spec.containers[0]!.image, 'memcached:drifted', 'the image kubectl set is left')
  const events = (await client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default' })).items as unknown as { reason: string; type: string; involvedObject: { name: string } }[]
  t.ok(events.some((e) => e.reason === 'DriftDetected' && e.type === 'Warning' && e.involvedObject.name === 'warned'), 'a Warning event')
  t.ok((bed.metrics.counts['drifted:Deployment'] ?? 0) >= 1, 'the metric counted it')
  // A resync later, still left as it is.
  const resyncs = bed.metrics.counts['reconciled:success'] ?? 0
  await eventually('a resync', () => ((bed.metrics.counts['reconciled:success'] ?? 0) > resyncs + 1 ? true : undefined))
  t.equal((await spec('warned')).template.spec.containers[0]!.image, 'memcached:drifted', 'still left after resyncs')
  // A spec change is a new render: applied (the drifted image stays, the operator's own field changes).
  await kubectl(['patch', 'mc', 'warned', '--type', 'merge', '-p', '{"spec":{"size":2}}'])
  await eventually('scaled', async () => ((await spec('warned')).replicas === 2 ? true : undefined))
  t.equal((await spec('warned')).template.spec.containers[0]!.image, 'memcached:drifted')
  // The apply that scaled it did not take the image back: later reconciles leave it too.
  const after = bed.metrics.counts['reconciled:success'] ?? 0
  await eventually('resyncs after the scale', () => ((bed.metrics.counts['reconciled:success'] ?? 0) > after + 2 ? true : undefined))
  t.equal((await spec('warned')).template.spec.containers[0]!.image, 'memcached:drifted', 'still left after the apply and resyncs')
  t.match(condition(await client.get({ ...MC, name: 'warned' }), 'Drifted'), { status: 'True', message: /\(changed by kubectl-set\)$/ })
  // Nor did it take the field over: a reconcile after a restart (no memory) still sees it as somebody else's.
  const live = await client.get({ ...DEPLOY, name: 'warned' })
  const image = ['spec', 'template', 'spec', 'containers', '[name="memcached"]', 'image']
  t.notOk(owns(appliedFields(live as never, 'memcached-operator'), image), 'the operator does not own the drifted image')
  t.same(managersOf(live, image), ['kubectl-set'])
  // Back to correct: the render wins again, and Drifted turns False.
  await kubectl(['patch', 'mc', 'warned', '--type', 'merge', '-p', '{"spec":{"drift":{"mode":"correct"}}}'])
  await eventually('corrected', async () => ((await spec('warned')).template.spec.containers[0]!.image === 'memcached:1.6.38-alpine' ? true : undefined))
  await eventually('Drifted False', async () => (condition(await client.get({ ...MC, name: 'warned' }), 'Drifted')?.status === 'False' ? true : undefined))
})

t.test('ignore: a listed path of a targeted kind is never corrected; the rest is', async (t) => {
  await converged('ignoring', { size: 1, drift: { ignore: [{ paths: ['/spec/replicas'], target: { kind: 'Deployment' } }] } })
  await kubectl(['scale', 'deployment/ignoring', '--replicas=3'])
  await kubectl(['set', 'image', 'deployment/ignoring', 'memcached=memcached:drifted'])
  await eventually('the image corrected', async () => ((await spec('ignoring')).template.spec.containers[0]!.image === 'memcached:1.6.38-alpine' ? true : undefined))
  t.equal((await spec('ignoring')).replicas, 3, 'the replicas kubectl scaled to are left')
})

t.test('the CRD refuses a drift mode it does not know, with the field', async (t) => {
  const err = await client.create({ ...MC, metadata: { name: 'bad-drift', namespace: 'default' }, spec: { size: 1, drift: { mode: 'sometimes' } } }).catch((e: Error) => e)
  t.match(String(err), /spec\.drift\.mode: Unsupported value: "sometimes"/)
})
