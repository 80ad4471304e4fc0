/**
 * Secrets as inputs of a render, against the sandbox: the fixture chart test/fixtures/secret-input-chart
 * annotates its pod template with `secretChecksum(values.secretName)`. The operator sees only
 * Secrets labelled cache.example.com/memcached-input=true; a referenced Secret it does not see
 * makes the CR Degraded (SecretNotFound) and nothing is applied; the Secret's arrival, labelling
 * and rotation re-render the CRs that refer to it, without a resync.
 */
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { KubeClient, KubeObject } from '../operator/controller/client.ts'
import { loadChart } from '../operator/render/chart.ts'
import { secretChecksum } from '../operator/render/secrets.ts'
import { eventually, operatorWrites, reconcileCount, startLoggedBed, type LoggedBed } from './support/operator.ts'

const chart = loadChart(join(import.meta.dirname, 'fixtures', 'secret-input-chart'))
const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const LABEL = { 'cache.example.com/memcached-input': 'true' }
type Condition = { type: string; status: string; reason: string; message: string }
const conditionOf = (o: KubeObject, type: string) => ((o.status ?? {}) as { conditions?: Condition[] }).conditions?.find((c) => c.type === type)
const podAnnotation = (d: KubeObject) => (d.spec as { template: { metadata: { annotations?: Record<string, string> } } }).template.metadata.annotations?.['checksum/secret']

/** A sandbox with the fixture chart's CRD and an operator logging at trace into `logs`. */
const startSecretBed = (t: Test): Promise<LoggedBed> => startLoggedBed(t, chart, () => chart)

const cr = (name: string, spec: Record<string, unknown>) => ({ ...MC, metadata: { name, namespace: 'default' }, spec })
const secret = (name: string, data: Record<string, string>, labels: Record<string, string> | null = LABEL): KubeObject =>
  ({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'default', ...(labels ? { labels } : {}) }, type: 'Opaque', stringData: data }) as KubeObject
const getCr = (c: KubeClient, name: string) => c.get({ ...MC, namespace: 'default', name })
const getDeployment = (c: KubeClient, name: string) => c.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name })
const deploymentOrNone = async (c: KubeClient, name: string) => (await c.list({ apiVersion: 'apps/v1', kind: 'Deployment' }, { namespace: 'default' })).items.find((d) => d.metadata.name === name)
const degraded = (c: KubeClient, name: string, reason: string) =>
  eventually(`${name} Degraded ${reason}`, async () => {
    const c0 = conditionOf(await getCr(c, name), 'Degraded')
    return c0?.status === 'True' && c0.reason === reason ? c0 : undefined
  })
const annotated = (c: KubeClient, name: string, sum: string) => eventually(`${name}'s pods annotated ${sum.slice(0, 8)}`, async () => ((await deploymentOrNone(c, name)) && podAnnotation(await getDeployment(c, name)) === sum ? true : undefined))

t.test('a missing Secret makes the CR Degraded SecretNotFound, applies nothing, and its creation applies the CR at once', async (t) => {
  const bed = await startSecretBed(t)
  await bed.client.create(cr('tls', { size: 1, secretName: 'tls-certs' }))
  const cond = await degraded(bed.client, 'tls', 'SecretNotFound')
  t.equal(cond.message, 'Secret default/tls-certs does not exist (the chart refers to it; create it with the label cache.example.com/memcached-input=true)')
  t.equal(conditionOf(await getCr(bed.client, 'tls'), 'Ready')?.reason, 'SecretNotFound', 'Ready says why')
  t.same(operatorWrites(bed.sandbox).filter((w) => w.resource !== 'events' && !w.subresource), [], 'nothing was applied')
  t.notOk(await deploymentOrNone(bed.client, 'tls'))
  const events = (await bed.client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default' })).items as unknown as { reason: string; type: string; message: string }[]
  t.ok(events.some((e) => e.type === 'Warning' && e.reason === 'SecretNotFound' && e.message.includes('default/tls-certs')), 'a Warning event names the Secret')
  t.ok(bed.logs.some((l) => l.includes('"reason":"SecretNotFound"') && l.includes('"key":"default/tls"')), 'a log line')
  t.ok((bed.metrics.counts['failed:SecretNotFound'] ?? 0) > 0, 'the failure metric')
  t.ok(bed.sandbox.requests.log().some((r) => r.userAgent === 'memcached-operator/test' && r.verb === 'get' && r.resource === 'secrets' && r.name === 'tls-certs'), 'one GET told "does not exist" apart')

  // Neither the resync (ten minutes) nor the look a minute later: the Secret's event brings the CR back.
  await bed.client.create(secret('tls-certs', { 'tls.crt': 'cert-1' }))
  await annotated(bed.client, 'tls', secretChecksum({ type: 'Opaque', stringData: { 'tls.crt': 'cert-1' } }))
  await eventually('Degraded AsExpected', async () => (conditionOf(await getCr(bed.client, 'tls'), 'Degraded')?.status === 'False' ? true : undefined))
})

t.test('a change of the Secret\'s data changes the pods\' checksum annotation and rolls them; a change of its labels alone does not', async (t) => {
  const bed = await startSecretBed(t)
  await bed.client.create(secret('auth', { password: 'one' }))
  await bed.client.create(cr('rot', { size: 2, secretName: 'auth' }))
  await annotated(bed.client, 'rot', secretChecksum({ stringData: { password: 'one' } }))
  const podsOf = async () => (await bed.client.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: 'default', labelSelector: 'app.kubernetes.io/instance=rot' })).items.filter((p) => !p.metadata.deletionTimestamp).map((p) => p.metadata.name!)
  const before = new Set(await eventually('two pods', async () => ((await podsOf()).length === 2 ? podsOf() : undefined)))
  const generation = (await getDeployment(bed.client, 'rot')).metadata.generation

  await bed.client.patch({ apiVersion: 'v1', kind: 'Secret', namespace: 'default', name: 'auth' }, { metadata: { labels: { team: 'a' } } }, { type: 'merge' })
  await eventually('the relabel cached', () => (bed.controller.cachedSecrets().find((s) => s.metadata.name === 'auth')?.metadata.labels?.team === 'a' ? true : undefined))
  await new Promise((r) => setTimeout(r, 300))
  t.equal((await getDeployment(bed.client, 'rot')).metadata.generation, generation, 'the same checksum: the Deployment is not touched')

  await bed.client.patch({ apiVersion: 'v1', kind: 'Secret', namespace: 'default', name: 'auth' }, { stringData: { password: 'two' } }, { type: 'merge' })
  await annotated(bed.client, 'rot', secretChecksum({ stringData: { password: 'two' } }))
  const after = await eventually('new pods', async () => {
    const now = await podsOf()
    return now.length === 2 && now.every((n) => !before.has(n)) ? now : undefined
  })
  t.equal(after.length, 2, 'every pod was replaced')
})

t.test('a Secret that exists without the label: the message says so with the command to fix it, and labelling it applies the CR', async (t) => {
  const bed = await startSecretBed(t)
  await bed.client.create(secret('plain', { k: 'v' }, null))
  await bed.client.create(cr('unl', { size: 1, secretName: 'plain' }))
  const cond = await degraded(bed.client, 'unl', 'SecretNotFound')
  t.equal(cond.message, 'Secret default/plain exists but lacks the label cache.example.com/memcached-input=true, without which the operator does not see it: kubectl label secret plain -n default cache.example.com/memcached-input=true')
  t.notOk(await deploymentOrNone(bed.client, 'unl'), 'nothing applied')
  await bed.client.patch({ apiVersion: 'v1', kind: 'Secret', namespace: 'default', name: 'plain' }, { metadata: { labels: LABEL } }, { type: 'merge' })
  await annotated(bed.client, 'unl', secretChecksum({ stringData: { k: 'v' } }))
  // The label taken away: the Secret leaves the watch (a DELETED event), and the CR says so again.
  await bed.client.patch({ apiVersion: 'v1', kind: 'Secret', namespace: 'default', name: 'plain' }, { metadata: { labels: { 'cache.example.com/memcached-input': null } } }, { type: 'merge' })
  t.match((await degraded(bed.client, 'unl', 'SecretNotFound')).message, /^Secret default\/plain exists but lacks the label/)
})

t.test('a Secret that goes away leaves the live objects as they were, and only the CRs referring to a Secret are reconciled for it', async (t) => {
  const bed = await startSecretBed(t)
  await bed.client.create(secret('s1', { k: 'one' }))
  await bed.client.create(secret('unused', { k: 'x' }))
  await bed.client.create(cr('uses', { size: 1, secretName: 's1' }))
  await bed.client.create(cr('other', { size: 1 }))
  await annotated(bed.client, 'uses', secretChecksum({ stringData: { k: 'one' } }))
  await eventually('other applied', () => deploymentOrNone(bed.client, 'other'))
  await eventually('both Ready', async () => {
    for (const n of ['uses', 'other']) if (conditionOf(await getCr(bed.client, n), 'Ready')?.status !== 'True') return undefined
    return true
  })
  // Quiet: no reconcile for a while.
  let count = reconcileCount(bed.metrics)
  await eventually('quiet', async () => {
    await new Promise((r) => setTimeout(r, 300))
    const now = reconcileCount(bed.metrics)
    if (now === count) return true
    count = now
    return undefined
  })

  // A labelled Secret nobody refers to: its change reconciles nothing.
  await bed.client.patch({ apiVersion: 'v1', kind: 'Secret', namespace: 'default', name: 'unused' }, { stringData: { k: 'y' } }, { type: 'merge' })
  const changed = secretChecksum({ stringData: { k: 'y' } })
  await eventually('the change cached', () => (bed.controller.cachedSecrets().find((s) => s.metadata.name === 'unused')?.checksum === changed ? true : undefined))
  await new Promise((r) => setTimeout(r, 300))
  t.equal(reconcileCount(bed.metrics), count, 'no reconcile for a Secret no render referred to')

  const deployment = await getDeployment(bed.client, 'uses')
  await bed.client.delete({ apiVersion: 'v1', kind: 'Secret', namespace: 'default', name: 's1' })
  const cond = await degraded(bed.client, 'uses', 'SecretNotFound')
  t.match(cond.message, /^Secret default\/s1 does not exist/)
  const live = await getDeployment(bed.client, 'uses')
  t.equal(live.metadata.resourceVersion, deployment.metadata.resourceVersion, 'the Deployment was left as it was')
  t.equal(conditionOf(await getCr(bed.client, 'other'), 'Degraded')?.status, 'False', 'the other CR is untouched')
})

t.test('a Secret\'s content reaches no log line, event, status or cache', async (t) => {
  const bed = await startSecretBed(t)
  const VALUE = 'secret-input-Vq7xK2mW9pL4'
  const VALUE_2 = 'secret-input-Jd3sN8bT1cR6'
  // Unlabelled first: the failing path GETs it (with its data) to tell it lacks the label.
  await bed.client.create(secret('hidden', { password: VALUE }, null))
  await bed.client.create(cr('hid', { size: 1, secretName: 'hidden' }))
  t.match((await degraded(bed.client, 'hid', 'SecretNotFound')).message, /lacks the label/)
  await bed.client.patch({ apiVersion: 'v1', kind: 'Secret', namespace: 'default', name: 'hidden' }, { metadata: { labels: LABEL } }, { type: 'merge' })
  await annotated(bed.client, 'hid', secretChecksum({ stringData: { password: VALUE } }))
  await bed.client.patch({ apiVersion: 'v1', kind: 'Secret', namespace: 'default', name: 'hidden' }, { stringData: { password: VALUE_2 } }, { type: 'merge' })
  await annotated(bed.client, 'hid', secretChecksum({ stringData: { password: VALUE_2 } }))
  await bed.client.delete({ apiVersion: 'v1', kind: 'Secret', namespace: 'default', name: 'hidden' })
  await degraded(bed.client, 'hid', 'SecretNotFound')

  const logs = bed.logs.join('\n')
  t.match(logs, /"msg":"updated"/, 'the rotation was logged')
  const events = JSON.stringify([
    ...(await bed.client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default' })).items,
    ...(await bed.client.list({ apiVersion: 'events.k8s.io/v1', kind: 'Event' }, { namespace: 'default' })).items,
  ])
  t.match(events, /SecretNotFound/, 'events were recorded')
  const status = JSON.stringify((await getCr(bed.client, 'hid')).status)
  const rendered = JSON.stringify(await getDeployment(bed.client, 'hid'))
  const cache = JSON.stringify(bed.controller.cachedSecrets())
  await bed.client.create(secret('hidden', { password: VALUE }))
  await eventually('cached again', () => (bed.controller.cachedSecrets().some((s) => s.metadata.name === 'hidden') ? true : undefined))
  const cacheWithIt = JSON.stringify(bed.controller.cachedSecrets())
  t.match(cacheWithIt, /"checksum":"[0-9a-f]{64}"/, 'the cache holds the checksum')
  for (const v of [VALUE, VALUE_2]) {
    for (const form of [v, Buffer.from(v).toString('base64')]) {
      for (const [where, text] of [['logs', logs], ['events', events], ['status', status], ['the Deployment', rendered], ['the cache', cache], ['the cache', cacheWithIt]] as const) {
        t.notOk(text.includes(form), `${where} do not contain ${v}${form === v ? '' : ' (base64)'}`)
      }
    }
  }
})
