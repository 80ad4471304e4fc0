/**
 * extstore's volumes through the operator and the sandbox (which validates pods and StatefulSets as
 * kube-apiserver 1.34 does, and admits them under the restricted Pod Security level): a
 * StatefulSet's claim per pod from its volumeClaimTemplates, and a Deployment's generic ephemeral
 * volume, each given to the pods' fsGroup; a resync of either applies nothing; a new claim size,
 * which a StatefulSet cannot take in place (apps/validation ValidateStatefulSetUpdate), re-creates it.
 */
import t from 'tap'
import type { KubeClient, KubeObject } from '../operator/controller/client.ts'
import { loadChart } from '../operator/render/chart.ts'
import { eventually, operatorWrites, startBed } from './support/operator.ts'

const chart = loadChart()
const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
type Volume = { name: string; persistentVolumeClaim?: { claimName: string }; ephemeral?: { volumeClaimTemplate: { spec: { resources: { requests: { storage: string } } } } } }
type PodSpec = { securityContext: { fsGroup?: number; fsGroupChangePolicy?: string }; volumes?: Volume[]; containers: { name: string; volumeMounts?: { name: string; mountPath: string }[] }[] }
type Condition = { type: string; status: string; reason: string }

async function ready(c: KubeClient, name: string, size: number): Promise<KubeObject> {
  return eventually(`${name} Ready with ${size} pods`, async () => {
    const o = await c.get({ ...MC, namespace: 'default', name })
    const s = (o.status ?? {}) as { observedGeneration?: number; readyReplicas?: number; conditions?: Condition[] }
    return s.observedGeneration === o.metadata.generation && s.readyReplicas === size && s.conditions?.some((x) => x.type === 'Ready' && x.status === 'True') ? o : undefined
  })
}
const podsOf = async (c: KubeClient, name: string) =>
  (await c.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: 'default', labelSelector: `app.kubernetes.io/instance=${name}` })).items.filter((p) => !p.metadata.deletionTimestamp)

t.test('extstore on claims: accepted, mounted, given to the fsGroup, unchanged on resync, re-created for a new size', async (t) => {
  const bed = await startBed({ chart, resyncPeriodMs: 300 })
  t.teardown(() => bed.stop())
  await bed.client.create({ ...MC, metadata: { name: 'flash', namespace: 'default' }, spec: { size: 2, workload: { kind: 'StatefulSet' }, extstore: { enabled: true, sizeMB: 2048, volume: { type: 'persistentVolumeClaim', storageClassName: 'local-nvme' } } } })
  await bed.client.create({ ...MC, metadata: { name: 'eph', namespace: 'default' }, spec: { size: 1, extstore: { enabled: true, volume: { type: 'ephemeral' } } } })
  await ready(bed.client, 'flash', 2)
  await ready(bed.client, 'eph', 1)

  const sts = await bed.client.get({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'default', name: 'flash' })
  const claims = (sts.spec as { volumeClaimTemplates: { metadata: { name: string }; spec: { storageClassName: string; resources: { requests: { storage: string } } } }[] }).volumeClaimTemplates
  t.same(claims.map((c) => [c.metadata.name, c.spec.storageClassName, c.spec.resources.requests.storage]), [['extstore', 'local-nvme', '2340Mi']], 'one claim template: the file / 0.9 plus 64Mi')
  t.same((sts.spec as { persistentVolumeClaimRetentionPolicy: unknown }).persistentVolumeClaimRetentionPolicy, { whenDeleted: 'Delete', whenScaled: 'Delete' })
  for (const pod of await podsOf(bed.client, 'flash')) {
    const spec = pod.spec as PodSpec
    t.same(spec.volumes?.find((v) => v.name === 'extstore'), { name: 'extstore', persistentVolumeClaim: { claimName: `extstore-${pod.metadata.name}` } }, `${pod.metadata.name} mounts its own claim`)
    t.same([spec.securityContext.fsGroup, spec.securityContext.fsGroupChangePolicy], [11211, 'OnRootMismatch'], 'given to the pods\' group')
  }
  const [eph] = await podsOf(bed.client, 'eph')
  const ephVolume = (eph!.spec as PodSpec).volumes?.find((v) => v.name === 'extstore')
  t.equal(ephVolume?.ephemeral?.volumeClaimTemplate.spec.resources.requests.storage, '1202Mi', 'the Deployment\'s pod has a generic ephemeral volume')
  t.equal((eph!.spec as PodSpec).securityContext.fsGroup, 11211)

  // A resync of the converged CRs finds both workloads as rendered: nothing applied.
  const writes = () => operatorWrites(bed.sandbox).filter((w) => w.resource === 'statefulsets' || w.resource === 'deployments').length
  const before = writes()
  // `skipped`: the reconciler found the object as rendered and sent no apply.
  const skipped = () => (bed.metrics.counts['skipped:StatefulSet'] ?? 0) + (bed.metrics.counts['skipped:Deployment'] ?? 0)
  const seen = skipped()
  await eventually('two more resyncs of each', () => (skipped() >= seen + 4 ? true : undefined))
  t.equal(writes(), before, 'no workload written on resync')

  // volumeClaimTemplates cannot change in place: the operator re-creates the StatefulSet.
  const uid = sts.metadata.uid
  await bed.client.patch({ ...MC, namespace: 'default', name: 'flash' }, { spec: { extstore: { sizeMB: 4096 } } }, { type: 'merge' })
  const recreated = await eventually('the StatefulSet re-created with the new claim size', async () => {
    const s = await bed.client.get({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'default', name: 'flash' }).catch(() => undefined)
    return s && s.metadata.uid !== uid ? s : undefined
  })
  t.equal((recreated.spec as { volumeClaimTemplates: { spec: { resources: { requests: { storage: string } } } }[] }).volumeClaimTemplates[0]!.spec.resources.requests.storage, '4616Mi')
  await ready(bed.client, 'flash', 2)
})
