/**
 * A Secret the chart reads that lacks a key the pods need (the TLS CA with client certificates,
 * the auth file's key): the operator says which key of which Secret, on the CR (Degraded and
 * Ready, reason SecretNotFound), in a Warning event and a log line, before any pod could crash on
 * it (memcached exits at start without its CA file: test/memcached-tls.test.ts), and applies
 * nothing; adding the key applies the CR. Key names only: the operator's Secret cache holds no values.
 */
import t from 'tap'
import type { KubeClient, KubeObject } from '../operator/controller/client.ts'
import { loadChart } from '../operator/render/chart.ts'
import { eventually, operatorWrites, startLoggedBed } from './support/operator.ts'

const chart = loadChart()
const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const LABEL = { 'cache.example.com/memcached-input': 'true' }
type Condition = { type: string; status: string; reason: string; message: string }
const conditionOf = (o: KubeObject, type: string) => ((o.status ?? {}) as { conditions?: Condition[] }).conditions?.find((c) => c.type === type)
const getCr = (c: KubeClient, name: string) => c.get({ ...MC, namespace: 'default', name })
const secret = (name: string, data: Record<string, string>): KubeObject => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'default', labels: LABEL }, type: 'Opaque', stringData: data }) as KubeObject
// The Secret may reach the operator's cache after the CR does ("not in the operator's cache yet");
// its arrival re-renders the CR, which then names the key.
const degraded = (c: KubeClient, name: string, reason: string) =>
  eventually(`${name} Degraded ${reason} for a key`, async () => {
    const c0 = conditionOf(await getCr(c, name), 'Degraded')
    return c0?.status === 'True' && c0.reason === reason && c0.message.includes('has no key') ? c0 : undefined
  })
const deployment = async (c: KubeClient, name: string) => (await c.list({ apiVersion: 'apps/v1', kind: 'Deployment' }, { namespace: 'default' })).items.find((d) => d.metadata.name === name)

t.test('clientAuth require with a TLS Secret without ca.crt: the key and the Secret on the CR, nothing applied; adding it applies the CR', async (t) => {
  const bed = await startLoggedBed(t, chart, () => chart)
  await bed.client.create(secret('mc-tls', { 'tls.crt': 'cert', 'tls.key': 'key' }))
  await bed.client.create({ ...MC, metadata: { name: 'mtls', namespace: 'default' }, spec: { size: 1, tls: { enabled: true, secretName: 'mc-tls', clientAuth: 'require' } } })
  const cond = await degraded(bed.client, 'mtls', 'SecretNotFound')
  t.equal(cond.message, 'Secret default/mc-tls has no key "ca.crt", which memcached verifies client certificates against (spec.tls.clientAuth is require)')
  t.equal(conditionOf(await getCr(bed.client, 'mtls'), 'Ready')?.reason, 'SecretNotFound')
  t.notOk(await deployment(bed.client, 'mtls'), 'no pods to crash-loop')
  t.same(operatorWrites(bed.sandbox).filter((w) => w.resource !== 'events' && !w.subresource), [], 'nothing was applied')
  const events = (await bed.client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default' })).items as unknown as { reason: string; type: string; message: string }[]
  t.ok(events.some((e) => e.type === 'Warning' && e.reason === 'SecretNotFound' && e.message.includes('has no key "ca.crt"')), 'a Warning event names the key')
  t.ok(bed.logs.some((l) => l.includes('has no key \\"ca.crt\\"')), 'a log line')
  t.notOk(bed.controller.cachedSecrets().some((s) => JSON.stringify(s).includes('cert')), 'the cache has key names, not values')

  await bed.client.patch({ apiVersion: 'v1', kind: 'Secret', namespace: 'default', name: 'mc-tls' }, { stringData: { 'ca.crt': 'ca' } }, { type: 'merge' })
  await eventually('the Deployment applied', () => deployment(bed.client, 'mtls'))
  await eventually('Degraded False', async () => (conditionOf(await getCr(bed.client, 'mtls'), 'Degraded')?.status === 'False' ? true : undefined))
})

t.test('an auth Secret without its secretKey: which key, which Secret', async (t) => {
  const bed = await startLoggedBed(t, chart, () => chart)
  await bed.client.create(secret('users', { password: 'alice:s3cret' }))
  await bed.client.create({ ...MC, metadata: { name: 'auth', namespace: 'default' }, spec: { size: 1, auth: { enabled: true, secretName: 'users' } } })
  const cond = await degraded(bed.client, 'auth', 'SecretNotFound')
  t.equal(cond.message, 'Secret default/users has no key "passwords", which holds the user:password lines (spec.auth.secretKey)')
  t.notOk(await deployment(bed.client, 'auth'))
  await bed.client.patch({ ...MC, namespace: 'default', name: 'auth' }, { spec: { auth: { secretKey: 'password' } } }, { type: 'merge' })
  await eventually('the Deployment applied', () => deployment(bed.client, 'auth'))
})
