/**
 * Renewed Secrets loaded in place, end to end: the operator against the sandbox, and behind each
 * sandbox pod a real memcached started with the rendered args (the operator's pod dialer maps a
 * pod to its process on loopback). The test plays the kubelet: after a Secret changes it writes the
 * new files into each pod's volume as one `..data` swap, and runs the rendered reloader sidecar.
 * Rotating the TLS or the auth Secret leaves every pod (uid, restart count) and the workload's
 * revision as they were, the cache warm, and the CR says what was loaded.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { X509Certificate } from 'node:crypto'
import type { TLSSocket } from 'node:tls'
import t from 'tap'
import type { KubeClient, KubeObject } from '../operator/controller/client.ts'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { writeAtomic } from './support/atomic-writer.ts'
import { plain, setGet, tls } from './support/memcached-client.ts'
import { podCommand, podOf, running, startPod, type Memcached } from './support/memcached.ts'
import { eventually, startBed } from './support/operator.ts'
import { makePki, renewed } from './support/pki.ts'

const chart = loadChart()
const pki = makePki()
const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const LABEL = { 'cache.example.com/memcached-input': 'true' }
type Condition = { type: string; status: string; reason: string; message: string }

/** The memcached process behind each sandbox pod, by pod name. */
const processes = new Map<string, Memcached>()
const sidecars: ChildProcess[] = []
/** Dials by pod name: each a try of the operator's to reach that pod's memcached. */
const dials = new Map<string, number>()
const bed = await startBed({
  chart,
  reloadRetryMs: 100,
  // No wait for a quiet Secret here (reconcile-reload.test.ts has it).
  reloadSettleMs: 0,
  // A pod without a process: a port nothing listens on (connection refused), as a pod a NetworkPolicy closes.
  podDialer: (pod) => {
    dials.set(pod.metadata.name ?? '', (dials.get(pod.metadata.name ?? '') ?? 0) + 1)
    return { host: '127.0.0.1', port: processes.get(pod.metadata.name ?? '')?.port ?? 1 }
  },
})
t.teardown(async () => {
  for (const s of sidecars) s.kill('SIGKILL')
  for (const p of processes.values()) await p.stop()
  await bed.stop()
})

const serialOf = (pem: string) => new X509Certificate(pem).serialNumber.toUpperCase()
const spec = (extra: Record<string, unknown>) => ({ size: 2, workload: { kind: 'StatefulSet' }, ...extra })
const getMc = (c: KubeClient, name: string) => c.get({ ...MC, namespace: 'default', name })
const condition = (o: KubeObject, type: string) => ((o.status ?? {}) as { conditions?: Condition[] }).conditions?.find((c) => c.type === type)
const loaded = (name: string, reason: string, message?: RegExp) =>
  eventually(`${name} SecretsLoaded ${reason}${message ? ` ${message}` : ''}`, async () => {
    const c = condition(await getMc(bed.client, name), 'SecretsLoaded')
    return c?.reason === reason && (!message || message.test(c.message)) ? c : undefined
  })
const events = async (name: string) =>
  (await bed.client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default', fieldSelector: `involvedObject.name=${name},involvedObject.kind=Memcached` })).items as (KubeObject & { reason: string; type: string; message: string })[]

/** The pods of an instance: uid, restart counts; and the StatefulSet's revision and generation. */
async function podState(name: string): Promise<unknown> {
  const pods = (await bed.client.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: 'default', labelSelector: `app.kubernetes.io/instance=${name}` })).items
  const sts = await bed.client.get({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'default', name })
  return {
    pods: pods.map((p) => [p.metadata.name, p.metadata.uid, ((p.status as { containerStatuses?: { restartCount: number }[] }).containerStatuses ?? []).map((c) => c.restartCount)]).sort(),
    generation: sts.metadata.generation,
    revision: (sts.status as { updateRevision?: string }).updateRevision,
  }
}

/** Starts the real memcached of pods <name>-0 and <name>-1 with the CR's rendered pod and the Secrets' files. */
async function startProcesses(name: string, extra: Record<string, unknown>, secrets: Record<string, Record<string, string>>, withSidecar = false): Promise<void> {
  const objects = renderInstance(chart, { name, namespace: 'default', spec: spec(extra) }).objects
  for (const pod of [`${name}-0`, `${name}-1`]) {
    const mc = running(await startPod(objects, { secrets, podName: pod }))
    processes.set(pod, mc)
    if (!withSidecar) continue
    const p = podOf(objects)
    const reloader = p.containers.find((c) => c.name === 'reloader')!
    const cmd = podCommand((reloader.command ?? []).map((a) => mc.files.path(a)), { uid: p.securityContext?.runAsUser, gid: p.securityContext?.runAsGroup })
    const sidecar = spawn(cmd[0]!, cmd.slice(1), { cwd: '/', stdio: ['ignore', 'pipe', 'ignore'], env: { PATH: '/usr/bin:/bin' } })
    sidecars.push(sidecar)
    let out = ''
    sidecar.stdout!.on('data', (d: Buffer) => (out += d.toString()))
    await eventually(`the reloader of ${pod} watching`, () => (out.includes('watching') ? true : undefined))
  }
}

/** What the kubelet does within its sync period: the pod's volume gets the Secret's new content, as one swap. */
function kubeletUpdates(name: string, mountPath: string, files: Record<string, string>): void {
  for (const pod of [`${name}-0`, `${name}-1`]) writeAtomic(processes.get(pod)!.files.path(mountPath), files)
}

async function servedSerial(pod: string): Promise<string> {
  const conn = await tls(processes.get(pod)!.port)
  try {
    return (conn.socket as TLSSocket).getPeerX509Certificate()!.serialNumber.toUpperCase()
  } finally {
    conn.close()
  }
}

t.test('a renewed TLS certificate is loaded into every pod by refresh_certs: the pods and the cache stay, the CR says what was loaded', async (t) => {
  const tlsSpec = { tls: { enabled: true, secretName: 'tls-cert' } }
  await bed.client.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'tls-cert', namespace: 'default', labels: LABEL }, type: 'kubernetes.io/tls', stringData: { 'tls.crt': pki.crt, 'tls.key': pki.key } } as KubeObject)
  await startProcesses('tls', tlsSpec, { 'tls-cert': { 'tls.crt': pki.crt, 'tls.key': pki.key } })
  await bed.client.create({ ...MC, metadata: { name: 'tls', namespace: 'default' }, spec: spec(tlsSpec) })
  const first = await loaded('tls', 'Loaded', /every ready pod \(2\)/)
  t.equal(first.status, 'True')
  t.match(first.message, `every ready pod (2) serves the certificate of Secret tls-cert (serial ${serialOf(pki.crt)}`)
  for (const pod of ['tls-0', 'tls-1']) {
    const conn = await tls(processes.get(pod)!.port)
    t.equal(await setGet(conn, 'warm', pod), pod, `${pod}: an item before the rotation`)
    conn.close()
  }
  const before = await podState('tls')

  // cert-manager renews: a new key and certificate in the Secret.
  const next = renewed(pki)
  await bed.client.patch({ apiVersion: 'v1', kind: 'Secret', namespace: 'default', name: 'tls-cert' }, { stringData: { 'tls.crt': next.crt, 'tls.key': next.key } }, { type: 'merge' })
  const waiting = await loaded('tls', 'Loading')
  t.equal(waiting.status, 'False')
  t.match(waiting.message, /pod tls-\d still has the previous certificate in its files: waiting for the kubelet/, 'refresh_certs read the old files: the kubelet has not written the new ones yet')
  kubeletUpdates('tls', '/etc/memcached/tls', { 'tls.crt': next.crt, 'tls.key': next.key })
  const done = await loaded('tls', 'Loaded', new RegExp(serialOf(next.crt)))
  t.equal(done.status, 'True')
  for (const pod of ['tls-0', 'tls-1']) {
    t.equal(await servedSerial(pod), serialOf(next.crt), `${pod} serves the renewed certificate`)
    const conn = await tls(processes.get(pod)!.port)
    t.equal(await conn.command('get warm\r\n', 'END\r\n'), `VALUE warm 0 5\r\n${pod}\r\nEND\r\n`, `${pod} kept its items`)
    conn.close()
  }
  t.same(await podState('tls'), before, 'no pod restarted or replaced, the StatefulSet at the same revision')
  const reloaded = (await events('tls')).filter((e) => e.reason === 'CertificateReloaded')
  t.equal(reloaded.length, 1)
  t.match(reloaded[0]?.message, /memcached loaded the certificate of Secret tls-cert in place \(refresh_certs\) on tls-0, tls-1; no pod restarted|on tls-\d; no pod restarted/)
  t.equal(reloaded[0]?.type, 'Normal')
})

t.test('a renewed Secret whose key does not match its certificate: no pod is asked to load it, each keeps serving, the CR says why', async (t) => {
  const current = await servedSerial('tls-0')
  const next = renewed(pki)
  const bad = { 'tls.crt': next.crt, 'tls.key': pki.key }
  await bed.client.patch({ apiVersion: 'v1', kind: 'Secret', namespace: 'default', name: 'tls-cert' }, { stringData: bad }, { type: 'merge' })
  kubeletUpdates('tls', '/etc/memcached/tls', bad)
  const refused = await loaded('tls', 'CertificateInvalid')
  t.equal(refused.status, 'False')
  t.equal(refused.message, 'Secret default/tls-cert: tls.key is not the key of the certificate in tls.crt; memcached would refuse it, so no pod is asked to load it and each keeps serving the certificate it has')
  const warning = await eventually('the Warning event', async () => (await events('tls')).find((e) => e.reason === 'CertificateInvalid'))
  t.equal(warning.type, 'Warning')
  for (const pod of ['tls-0', 'tls-1']) t.equal(await servedSerial(pod), current, `${pod} still serves its certificate`)
})

t.test('files whose certificate is newer than their key (the Secret rotated twice during one refresh): memcached serves no TLS, the CR names the pod and its remedy', async (t) => {
  const good = renewed(pki)
  const before = await podState('tls')
  // The Secret is right; the files of tls-1 hold a newer chain than key, as two swaps during one refresh would leave them.
  kubeletUpdates('tls', '/etc/memcached/tls', { 'tls.crt': good.crt, 'tls.key': good.key })
  writeAtomic(processes.get('tls-1')!.files.path('/etc/memcached/tls'), { 'tls.crt': good.crt, 'tls.key': pki.key })
  await bed.client.patch({ apiVersion: 'v1', kind: 'Secret', namespace: 'default', name: 'tls-cert' }, { stringData: { 'tls.crt': good.crt, 'tls.key': good.key } }, { type: 'merge' })
  const failed = await loaded('tls', 'ReloadFailed')
  t.equal(failed.status, 'False')
  t.match(failed.message, /^pod tls-1: memcached answered refresh_certs with "Error loading the key: .*" and completes no TLS handshake since \(its files changed during the refresh\); restart it from the Secret's files: kubectl delete pod tls-1 -n default$/)
  const warning = await eventually('the Warning event', async () => (await events('tls')).find((e) => e.reason === 'ReloadFailed'))
  t.equal(warning.type, 'Warning')
  t.same(await podState('tls'), before, 'the operator restarts nothing itself')
  t.equal(await servedSerial('tls-0'), serialOf(good.crt), 'the other pod loaded it in place')
  // What the user does: the pod deleted, its workload starts it again, its memcached from the Secret's files.
  await bed.client.delete({ apiVersion: 'v1', kind: 'Pod', namespace: 'default', name: 'tls-1' })
  await processes.get('tls-1')!.stop()
  const objects = renderInstance(chart, { name: 'tls', namespace: 'default', spec: spec({ tls: { enabled: true, secretName: 'tls-cert' } }) }).objects
  processes.set('tls-1', running(await startPod(objects, { secrets: { 'tls-cert': { 'tls.crt': good.crt, 'tls.key': good.key } }, podName: 'tls-1' })))
  t.match((await loaded('tls', 'Loaded', new RegExp(serialOf(good.crt)))).message, 'every ready pod (2)')
})

t.test('a changed auth file is reloaded by the reloader sidecar\'s SIGHUP: the new password works, the pods and the cache stay', async (t) => {
  const authSpec = { auth: { enabled: true, secretName: 'users' }, reload: { intervalSeconds: 1 } }
  await bed.client.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'users', namespace: 'default', labels: LABEL }, stringData: { passwords: 'app:first-password\n' } } as KubeObject)
  await startProcesses('auth', authSpec, { users: { passwords: 'app:first-password\n' } }, true)
  await bed.client.create({ ...MC, metadata: { name: 'auth', namespace: 'default' }, spec: spec(authSpec) })
  t.match((await loaded('auth', 'Loaded', /\(2\)/)).message, 'every ready pod (2) accepts the passwords of Secret users')
  const login = async (pod: string, password: string) => {
    const c = await plain(processes.get(pod)!.port)
    try {
      return (await c.command(`set a 0 0 ${4 + password.length}\r\napp ${password}\r\n`)).trim()
    } finally {
      c.close()
    }
  }
  const before = await podState('auth')

  await bed.client.patch({ apiVersion: 'v1', kind: 'Secret', namespace: 'default', name: 'users' }, { stringData: { passwords: 'app:second-password\n' } }, { type: 'merge' })
  const waiting = await loaded('auth', 'Loading')
  t.match(waiting.message, /refuses the new passwords \(the auth file is not reloaded yet\)/)
  kubeletUpdates('auth', '/etc/memcached/auth', { passwords: 'app:second-password\n' })
  t.equal((await loaded('auth', 'Loaded')).status, 'True')
  for (const pod of ['auth-0', 'auth-1']) {
    t.equal(await login(pod, 'second-password'), 'STORED', `${pod} accepts the new password`)
    t.equal(await login(pod, 'first-password'), 'CLIENT_ERROR authentication failure', `${pod} refuses the old one`)
  }
  t.same(await podState('auth'), before, 'no pod restarted or replaced')
  const reloaded = await eventually('the PasswordsReloaded event', async () => (await events('auth')).find((e) => e.reason === 'PasswordsReloaded'))
  t.match(reloaded.message, /^memcached reloaded the auth file of Secret users in place \(SIGHUP\) on auth-\d(, auth-1)?; no pod restarted$/)
})

t.test('pods the operator cannot reach: PodUnreachable names each pod and the NetworkPolicy to check', async (t) => {
  await bed.client.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'far-cert', namespace: 'default', labels: LABEL }, type: 'kubernetes.io/tls', stringData: { 'tls.crt': pki.crt, 'tls.key': pki.key } } as KubeObject)
  await bed.client.create({ ...MC, metadata: { name: 'far', namespace: 'default' }, spec: spec({ tls: { enabled: true, secretName: 'far-cert' } }) })
  const c = await loaded('far', 'PodUnreachable', /far-1/)
  t.match(c.message, /^pod far-\d: 127\.0\.0\.1:1: .*ECONNREFUSED.*; pod far-\d: .*\(the operator reaches memcached's port on each pod: a NetworkPolicy must admit it\)$/)
  const served = await eventually('far Ready', async () => {
    const o = await getMc(bed.client, 'far')
    return condition(o, 'Ready')?.status === 'True' ? o : undefined
  })
  t.equal(condition(served, 'SecretsLoaded')?.reason, 'PodUnreachable', 'the cache serves: SecretsLoaded does not count towards Ready')
  t.ok((bed.metrics.counts['failed:PodUnreachable'] ?? 0) >= 1, 'the reconcile failures metric, by reason')
  // The tries back off, doubling from the 100 ms retry period (reload.ts RELOAD_MAX_RETRY_MS): over
  // 3 s at most five more, where a fixed period makes some thirty.
  const from = dials.get('far-0') ?? 0
  await new Promise((r) => setTimeout(r, 3000))
  const tries = (dials.get('far-0') ?? 0) - from
  t.ok(tries >= 1 && tries <= 6, `the operator tried far-0 again ${tries} times in 3 s`)
})
