/**
 * The in-place reload step (reload.ts) on its own, with a clock it is given: what it says of a
 * workload annotation it cannot read, of pods that keep refusing the new passwords past the
 * deadline, and that a pod it has seen loaded is not connected to again. Events are collected; the
 * pods are real memcached processes started with the rendered args.
 */
import pino from 'pino'
import t from 'tap'
import type { Memcached as MemcachedCr } from '../operator/api/memcached.ts'
import type { KubeClient, KubeObject } from '../operator/controller/client.ts'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { RELOAD_ANNOTATION } from '../operator/reconcile/reload-plan.ts'
import { RELOAD_DEADLINE_MS, RELOAD_SETTLE_MS, Reloader } from '../operator/reconcile/reload.ts'
import { secretSummary } from '../operator/reconcile/secrets.ts'
import { writeAtomic } from './support/atomic-writer.ts'
import { makePki, renewed } from './support/pki.ts'
import { MemcachedConnection } from '../operator/memcached/connection.ts'
import type { SecretSummary } from '../operator/reconcile/secrets.ts'
import { running, startPod } from './support/memcached.ts'

const log = pino({ level: 'silent' })
const cr = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'c', namespace: 'team', uid: 'cr-uid' }, spec: { size: 1 } } as MemcachedCr
const pod = (name: string) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'team', uid: `${name}-uid` }, status: { podIP: '127.0.0.1', conditions: [{ type: 'Ready', status: 'True' }] } }) as KubeObject
const workload = (plan: unknown) => ({ apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'c', namespace: 'team', annotations: { [RELOAD_ANNOTATION]: typeof plan === 'string' ? plan : JSON.stringify(plan) } } }) as KubeObject

function bed(opts: { secrets?: Record<string, SecretSummary>; data?: Record<string, Record<string, string>>; port?: number; now?: () => number }) {
  const events: { type: string; reason: string; message: string }[] = []
  let gets = 0
  const client = {
    get: async (ref: { name: string }) => {
      gets++
      const data = opts.data?.[ref.name] ?? {}
      return { apiVersion: 'v1', kind: 'Secret', metadata: { name: ref.name }, data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])) }
    },
  } as unknown as KubeClient
  const reloader = new Reloader({
    client,
    secrets: { get: (_ns, name) => opts.secrets?.[name] },
    events: { record: async (_cr, type, reason, message) => void events.push({ type, reason, message }) },
    dial: () => ({ host: '127.0.0.1', port: opts.port ?? 1 }),
    ...(opts.now ? { now: opts.now } : {}),
  })
  return { reloader, events, gets: () => gets }
}

t.test('a workload annotation the operator cannot read: SecretsLoaded False InvalidReloadPlan, one Warning event', async (t) => {
  const { reloader, events } = bed({})
  const first = await reloader.step(cr, workload('{"port":"x"}'), [], log)
  t.same(first?.condition, { type: 'SecretsLoaded', status: 'False', reason: 'InvalidReloadPlan', message: `annotation ${RELOAD_ANNOTATION} of StatefulSet c: port must be a port number (got "x")` })
  await reloader.step(cr, workload('{"port":"x"}'), [], log)
  t.equal(events.length, 1, 'the same warning is not repeated')
  t.equal(await reloader.step(cr, workload({ port: 11211, memory: { container: 'memcached', memoryMB: 64 } }), [], log), undefined, 'nothing to reload: no condition')
})

t.test('pods that keep refusing the new passwords: Loading, then NotLoaded once the deadline passed; once loaded, a pod is not connected to again', async (t) => {
  const objects = renderInstance(loadChart(), { name: 'c', namespace: 'team', spec: { size: 1, auth: { enabled: true, secretName: 'users' } } }).objects
  const mc = running(await startPod(objects, { secrets: { users: { passwords: 'app:old\n' } } }))
  t.teardown(() => mc.stop())
  let now = 1_000_000
  const plan = { port: 11211, authfile: { secretName: 'users', key: 'passwords' } }
  const secrets: Record<string, SecretSummary> = { users: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'users' }, checksum: 'new', keys: ['passwords'] } }
  const { reloader, events, gets } = bed({ secrets, data: { users: { passwords: 'app:new\n' } }, port: mc.port, now: () => now })
  const loading = await reloader.step(cr, workload(plan), [pod('c-0')], log)
  t.match(loading, { condition: { status: 'False', reason: 'Loading', message: 'pod c-0 refuses the new passwords (the auth file is not reloaded yet): waiting for the kubelet to update the mounted Secret (within its sync period, about a minute)' }, requeueAfterMs: 10_000 })
  now += RELOAD_DEADLINE_MS
  const late = await reloader.step(cr, workload(plan), [pod('c-0')], log)
  t.match(late?.condition, { status: 'False', reason: 'NotLoaded', message: /^after 300 s, pod c-0 refuses the new passwords .*: the kubelet has not updated the mounted Secret, or the pod's reloader sidecar is not running$/ })
  t.ok(events.some((e) => e.type === 'Warning' && e.reason === 'NotLoaded'))

  // The old password is what the pod has: the Secret says so again.
  secrets.users = { ...secrets.users!, checksum: 'old' }
  const { reloader: again, gets: gets2 } = bed({ secrets, data: { users: { passwords: 'app:old\n' } }, port: mc.port, now: () => now })
  t.match((await again.step(cr, workload(plan), [pod('c-0')], log))?.condition, { status: 'True', reason: 'Loaded', message: 'every ready pod (1) accepts the passwords of Secret users' })
  const before = gets2()
  t.match((await again.step(cr, workload(plan), [pod('c-0')], log))?.condition, { status: 'True', reason: 'Loaded' })
  t.equal(gets2(), before, 'a pod seen loaded: no Secret read, no connection')
  t.ok(gets() > 0)
})

t.test('a renewed certificate is asked for only once its Secret has been unchanged for the settle time: no refresh before, one after', async (t) => {
  const pki = makePki()
  const objects = renderInstance(loadChart(), { name: 'c', namespace: 'team', spec: { size: 1, tls: { enabled: true, secretName: 'c-tls' } } }).objects
  const mc = running(await startPod(objects, { secrets: { 'c-tls': { 'tls.crt': pki.crt, 'tls.key': pki.key } } }))
  t.teardown(() => mc.stop())
  const next = renewed(pki)
  writeAtomic(mc.files.path('/etc/memcached/tls'), { 'tls.crt': next.crt, 'tls.key': next.key })
  const summary = secretSummary({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'c-tls', namespace: 'team' }, data: { 'tls.crt': Buffer.from(next.crt).toString('base64'), 'tls.key': Buffer.from(next.key).toString('base64') } } as KubeObject)
  let now = 5_000_000
  const { reloader, events } = bed({ secrets: { 'c-tls': summary }, port: mc.port, now: () => now })
  const plan = { port: 11211, tls: { secretName: 'c-tls', clientCertificate: false } }
  const served = async () => {
    const c = await MemcachedConnection.open({ host: '127.0.0.1', port: mc.port, tls: {} })
    const fingerprint = c.served()
    c.close()
    return fingerprint
  }
  const old = await served()
  t.ok(old && old !== summary.tls?.fingerprint, 'the certificate of before is served')
  const early = await reloader.step(cr, workload(plan), [pod('c-0')], log)
  t.match(early, { condition: { status: 'False', reason: 'Loading', message: `pod c-0 serves the previous certificate: the certificate is loaded once the Secret has been unchanged for ${RELOAD_SETTLE_MS / 1000} s, as long as the kubelet may take to update the files (90 s left)` }, requeueAfterMs: RELOAD_SETTLE_MS })
  t.equal(await served(), old, 'not asked yet: the files are new, the certificate served is not')
  now += RELOAD_SETTLE_MS
  const done = await reloader.step(cr, workload(plan), [pod('c-0')], log)
  t.match(done?.condition, { status: 'True', reason: 'Loaded' })
  t.equal(await served(), summary.tls?.fingerprint, 'loaded')
  t.same(events.map((e) => e.reason), ['CertificateReloaded'])
})

t.test('clientAuth require: the operator presents the Secret\'s own certificate; an auth Secret without a user:password line is reported while reading it', async (t) => {
  const pki = makePki()
  const files = { 'tls.crt': pki.crt, 'tls.key': pki.key, 'ca.crt': pki.ca }
  const objects = renderInstance(loadChart(), { name: 'c', namespace: 'team', spec: { size: 1, tls: { enabled: true, secretName: 'c-tls', clientAuth: 'require' } } }).objects
  const mc = running(await startPod(objects, { secrets: { 'c-tls': files } }))
  t.teardown(() => mc.stop())
  const summary = secretSummary({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'c-tls', namespace: 'team' }, data: Object.fromEntries(Object.entries(files).map(([k, v]) => [k, Buffer.from(v).toString('base64')])) } as KubeObject)
  const { reloader } = bed({ secrets: { 'c-tls': summary }, data: { 'c-tls': files }, port: mc.port })
  const plan = { port: 11211, tls: { secretName: 'c-tls', clientCertificate: true } }
  t.match((await reloader.step(cr, workload(plan), [pod('c-0')], log))?.condition, { status: 'True', reason: 'Loaded', message: /^every ready pod \(1\) serves the certificate of Secret c-tls/ }, 'the handshake with the client certificate succeeded')

  const users: SecretSummary = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'users' }, checksum: 'x', keys: ['passwords'] }
  const { reloader: noUser } = bed({ secrets: { users }, data: { users: { passwords: '# nobody\n' } }, port: mc.port })
  t.match((await noUser.step(cr, workload({ port: 11211, authfile: { secretName: 'users', key: 'passwords' } }), [pod('c-0')], log))?.condition, { status: 'False', reason: 'Loading', message: 'reading the Secrets to connect to the pods: Secret team/users has no user:password line in passwords' })
})
