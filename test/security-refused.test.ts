/**
 * A chart that tries to render an object in another namespace, a cluster-scoped kind, or a kind
 * outside the operator's list (fixture `test/fixtures/reliability/hostile-chart/escape.ejs`): the
 * CR is Degraded with reason ObjectRefused naming the object, gets a Warning event, and nothing
 * of its render is applied — neither the escaping object nor the ordinary ones; a CR that was
 * running keeps its previous objects untouched; other CRs of the same operator still converge.
 */
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { loadChart } from '../operator/render/chart.ts'
import { chartWith } from './support/chart.ts'
import { operatorWrites, startBed } from './support/operator.ts'
import { MC, exists, memcached, notConverged, snapshot, statusOf } from './fixtures/reliability/support.ts'

const here = dirname(fileURLToPath(import.meta.url))
const chart = loadChart(chartWith({ 'templates/escape.ejs': readFileSync(join(here, 'fixtures', 'reliability', 'hostile-chart', 'escape.ejs'), 'utf8') }))
const escape = (how: string) => ({ size: 2, podAnnotations: { 'test/escape': how } })

const CASES = [
  { how: 'namespace', message: /ConfigMap\/(\S+)-escaped: namespace "kube-system" is not the instance's namespace "default"/, escaped: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'kube-system' }, suffix: 'escaped' },
  { how: 'cluster', message: /ClusterRoleBinding\/\S+-admin: kind rbac\.authorization\.k8s\.io\/v1 ClusterRoleBinding is not one the operator manages/, escaped: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', namespace: '' }, suffix: 'admin' },
  { how: 'kind', message: /Secret\/\S+-creds: kind v1 Secret is not one the operator manages/, escaped: { apiVersion: 'v1', kind: 'Secret', namespace: 'default' }, suffix: 'creds' },
] as const

t.test('objects outside the instance namespace or the managed kinds are refused: condition, event, nothing applied', async (t) => {
  const bed = await startBed({ chart })
  t.teardown(() => bed.stop())
  const c = bed.client

  for (const k of CASES) await c.create(memcached(`esc-${k.how}`, escape(k.how)))
  await c.create(memcached('plain', { size: 2 }))
  // A running CR whose render starts to escape keeps what it had.
  await c.create(memcached('turned', { size: 2 }))
  const depBefore = await (async () => {
    for (;;) {
      const cr = await c.get({ ...MC, namespace: 'default', name: 'turned' })
      if (statusOf(cr).readyReplicas === 2 && statusOf(cr).observedGeneration === cr.metadata.generation) return c.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'turned' })
      await new Promise((r) => setTimeout(r, 50))
    }
  })()
  await c.patch({ ...MC, namespace: 'default', name: 'turned' }, { spec: escape('cluster') }, { type: 'merge' })

  const names = [...CASES.map((k) => `esc-${k.how}`), 'turned']
  const degraded = new Map<string, string>()
  for (let i = 0; i < 400 && degraded.size < names.length; i++) {
    for (const name of names) {
      const cr = await c.get({ ...MC, namespace: 'default', name })
      const d = statusOf(cr).conditions?.find((x) => x.type === 'Degraded')
      if (statusOf(cr).observedGeneration === cr.metadata.generation && d?.status === 'True' && d.reason === 'ObjectRefused') degraded.set(name, d.message)
    }
    await new Promise((r) => setTimeout(r, 50))
  }
  const events = (await c.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default' })).items as unknown as { reason: string; type: string; message: string; involvedObject: { name: string } }[]
  for (const k of [...CASES, { ...CASES[1], how: 'turned' }]) {
    const name = k.how === 'turned' ? 'turned' : `esc-${k.how}`
    t.match(degraded.get(name), k.message, `${name}: Degraded ObjectRefused naming the object`)
    t.ok(events.some((e) => e.involvedObject.name === name && e.type === 'Warning' && e.reason === 'ObjectRefused' && k.message.test(e.message)), `${name}: a Warning event ObjectRefused`)
    // The sandbox serves no RBAC kinds; for the ClusterRoleBinding the request log below is the proof.
    if (k.escaped.kind !== 'ClusterRoleBinding') t.notOk(await exists(c, { apiVersion: k.escaped.apiVersion, kind: k.escaped.kind, namespace: k.escaped.namespace, name: `${name}-${k.suffix}` }), `${name}: the escaping object was not created`)
  }
  for (const k of CASES) {
    for (const [apiVersion, kind] of [['apps/v1', 'Deployment'], ['v1', 'Service'], ['policy/v1', 'PodDisruptionBudget']] as const) {
      t.notOk(await exists(c, { apiVersion, kind, namespace: 'default', name: `esc-${k.how}` }), `esc-${k.how}: no ${kind} either (the whole render is refused)`)
    }
  }
  const depAfter = await c.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'turned' })
  t.equal(depAfter.metadata.resourceVersion, depBefore.metadata.resourceVersion, 'turned: its running Deployment was not touched')
  const writes = operatorWrites(bed.sandbox).filter((w) => w.resource !== 'events' && w.subresource !== 'status')
  t.same(writes.filter((w) => w.name !== 'plain' && w.name !== 'turned'), [], 'no write but status and events for the refused CRs')
  t.notOk(writes.some((w) => ['secrets', 'configmaps', 'clusterrolebindings'].includes(w.resource)), 'no write of an escaping kind at all')
  // The other CR of the same operator is not blocked.
  let left: string | undefined = 'not checked'
  for (let i = 0; i < 200 && left !== undefined; i++) {
    const { crs, children, pods } = await snapshot(c)
    left = await notConverged(c, chart, crs.find((x) => x.metadata.name === 'plain')!, pods, children)
    if (left) await new Promise((r) => setTimeout(r, 100))
  }
  t.equal(left, undefined, 'a plain CR beside them converged')
})
