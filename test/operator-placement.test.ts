/**
 * The chart's default placement through the operator and the sandbox (which validates pod templates
 * as kube-apiserver 1.34 does): soft anti-affinity over nodes at weight 100 and a zone spread that
 * never leaves a pod Pending, on a Deployment and a StatefulSet; the hard presets are accepted too.
 */
import t from 'tap'
import type { KubeClient, KubeObject } from '../operator/controller/client.ts'
import { loadChart } from '../operator/render/chart.ts'
import { eventually, startBed } from './support/operator.ts'

const chart = loadChart()
const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
type PodSpec = { affinity?: { podAntiAffinity: Record<string, { weight?: number; podAffinityTerm?: { topologyKey: string }; topologyKey?: string }[]> }; topologySpreadConstraints?: { topologyKey: string; whenUnsatisfiable: string; maxSkew: number }[] }

async function ready(c: KubeClient, name: string, size: number): Promise<KubeObject> {
  return eventually(`${name} Ready with ${size} pods`, async () => {
    const o = await c.get({ ...MC, namespace: 'default', name })
    const s = (o.status ?? {}) as { observedGeneration?: number; readyReplicas?: number; conditions?: { type: string; status: string }[] }
    return s.observedGeneration === o.metadata.generation && s.readyReplicas === size && s.conditions?.some((x) => x.type === 'Ready' && x.status === 'True') ? o : undefined
  })
}

t.test('the default placement and the hard presets are accepted and reach the pods', async (t) => {
  const bed = await startBed({ chart })
  t.teardown(() => bed.stop())
  await bed.client.create({ ...MC, metadata: { name: 'soft', namespace: 'default' }, spec: { size: 3 } })
  await bed.client.create({ ...MC, metadata: { name: 'hard', namespace: 'default' }, spec: { size: 2, workload: { kind: 'StatefulSet' }, podAntiAffinityPreset: 'hard', zoneSpreadPreset: 'hard' } })
  await ready(bed.client, 'soft', 3)
  await ready(bed.client, 'hard', 2)
  const pods = await bed.client.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: 'default' })
  const of = (name: string) => pods.items.filter((p) => p.metadata.labels?.['app.kubernetes.io/instance'] === name).map((p) => p.spec as PodSpec)
  for (const spec of of('soft')) {
    t.same(spec.affinity?.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution?.map((w) => [w.weight, w.podAffinityTerm?.topologyKey]), [[100, 'kubernetes.io/hostname']])
    t.same(spec.topologySpreadConstraints?.map((c) => [c.topologyKey, c.maxSkew, c.whenUnsatisfiable]), [['topology.kubernetes.io/zone', 1, 'ScheduleAnyway']])
  }
  for (const spec of of('hard')) {
    t.same(spec.affinity?.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution?.map((w) => w.topologyKey), ['kubernetes.io/hostname'])
    t.same(spec.topologySpreadConstraints?.map((c) => [c.topologyKey, c.maxSkew, c.whenUnsatisfiable]), [['topology.kubernetes.io/zone', 1, 'DoNotSchedule']])
  }
})
