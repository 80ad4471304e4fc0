/**
 * What the chart renders for Secrets loaded in place (values.reload), what the operator reads of
 * it (reload-plan.ts), and what it keeps of a TLS Secret (certificate.ts).
 */
import t from 'tap'
import type { KubeObject } from '../operator/controller/client.ts'
import { certificateSummary, describeProblem } from '../operator/memcached/certificate.ts'
import { fingerprintOf } from '../operator/memcached/connection.ts'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { secretsFrom } from '../operator/render/secrets.ts'
import { RELOAD_ANNOTATION, reloadPlanOf } from '../operator/reconcile/reload-plan.ts'
import { secretSummary } from '../operator/reconcile/secrets.ts'
import { makePki, renewed } from './support/pki.ts'
import { X509Certificate } from 'node:crypto'

const chart = loadChart()
const sums = secretsFrom(new Map([['team/c-tls', 'sum-tls'], ['team/users', 'sum-users']]))
const render = (spec: Record<string, unknown>) => renderInstance(chart, { name: 'c', namespace: 'team', spec: { size: 2, ...spec }, secrets: sums }).objects
interface Pod {
  metadata: { annotations?: Record<string, string> }
  spec: { shareProcessNamespace?: boolean; containers: { name: string; args?: string[]; command?: string[]; volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[]; securityContext?: unknown }[]; volumes?: { name: string; emptyDir?: unknown }[] }
}
const workload = (objects: ReturnType<typeof render>, kind = 'Deployment') => objects.find((o) => o.kind === kind) as unknown as KubeObject & { spec: { template: Pod } }

t.test('TLS loaded in place (the default): no checksum on the pod template, the plan (with memcached\'s memory) on the workload', async (t) => {
  for (const kind of ['Deployment', 'StatefulSet']) {
    const w = workload(render({ workload: { kind }, tls: { enabled: true, secretName: 'c-tls', clientAuth: 'require' } }), kind)
    t.same(w.spec.template.metadata.annotations, undefined, `${kind}: a renewed certificate does not change the pod template`)
    t.same(reloadPlanOf(w), { port: 11211, tls: { secretName: 'c-tls', clientCertificate: true }, memory: { container: 'memcached', memoryMB: 64 } }, `${kind}: the plan`)
    t.notOk(w.spec.template.spec.shareProcessNamespace, 'no sidecar for TLS: the operator sends refresh_certs')
    t.same(w.spec.template.spec.containers.map((c) => c.name), ['memcached'])
  }
  const certManager = workload(render({ tls: { enabled: true, certManager: { enabled: true, issuerRef: { name: 'ca' } } } }))
  t.same(reloadPlanOf(certManager)?.tls, { secretName: 'c-tls', clientCertificate: false }, 'the Secret cert-manager writes')
})

t.test('the auth file loaded in place: a reloader sidecar in the memcached image, the process namespace shared, memcached\'s pid file in memory', async (t) => {
  const w = workload(render({ auth: { enabled: true, secretName: 'users' } }))
  const pod = w.spec.template
  t.same(pod.metadata.annotations, undefined, 'no checksum/auth-secret')
  t.same(reloadPlanOf(w), { port: 11211, authfile: { secretName: 'users', key: 'passwords' }, memory: { container: 'memcached', memoryMB: 64 } })
  t.equal(pod.spec.shareProcessNamespace, true, 'the sidecar can signal memcached')
  const [memcached, reloader] = pod.spec.containers
  t.same(memcached?.args?.slice(-4), ['-Y', '/etc/memcached/auth/passwords', '-P', '/run/memcached/memcached.pid'])
  t.equal(reloader?.name, 'reloader')
  t.same(reloader?.command?.slice(0, 2), ['sh', '-c'])
  t.match(reloader?.command?.[2], /readlink "\$data"/, 'it watches the kubelet\'s ..data link')
  t.same(reloader?.volumeMounts, [{ name: 'auth', mountPath: '/etc/memcached/auth', readOnly: true }, { name: 'run', mountPath: '/run/memcached', readOnly: true }])
  t.same(reloader?.securityContext, memcached?.securityContext, 'as restricted as memcached')
  t.same(pod.spec.volumes?.find((v) => v.name === 'run'), { name: 'run', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } })
})

t.test('reload.enabled false, and SASL: a rotation rolls the pods (the checksum annotations); SASL\'s plan has only the memory', async (t) => {
  const off = workload(render({ tls: { enabled: true, secretName: 'c-tls' }, auth: { enabled: true, secretName: 'users' }, reload: { enabled: false } }))
  t.same(off.spec.template.metadata.annotations, { 'checksum/tls-secret': 'sum-tls', 'checksum/auth-secret': 'sum-users' })
  t.equal(reloadPlanOf(off), undefined)
  t.same(off.spec.template.spec.containers.map((c) => c.name), ['memcached'])
  const sasl = workload(render({ auth: { enabled: true, mode: 'sasl', secretName: 'users' } }))
  t.same(sasl.spec.template.metadata.annotations, { 'checksum/auth-secret': 'sum-users' }, 'the SASL database is written at start: a new password rolls the pods')
  t.same(reloadPlanOf(sasl), { port: 11211, memory: { container: 'memcached', memoryMB: 64 } }, 'only the memory')
})

t.test('a workload\'s plan that is not what the operator reads is refused, naming the annotation', async (t) => {
  const w = (text: string) => ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'c', annotations: { [RELOAD_ANNOTATION]: text } } }) as KubeObject
  t.throws(() => reloadPlanOf(w('{')), /annotation memcached.cache.example.com\/reload of Deployment c: not JSON/)
  t.throws(() => reloadPlanOf(w('[]')), /must be a JSON object/)
  t.throws(() => reloadPlanOf(w('{"port":0}')), /port must be a port number \(got 0\)/)
  t.throws(() => reloadPlanOf(w('{"port":1,"tls":{"secretName":""}}')), /tls must be/)
  t.throws(() => reloadPlanOf(w('{"port":1,"authfile":{"secretName":"a"}}')), /authfile must be/)
  t.throws(() => reloadPlanOf(w('{"port":1,"memory":{"container":"m","memoryMB":1.5}}')), /memory must be/)
  t.equal(reloadPlanOf({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'c' } }), undefined)
  t.equal(reloadPlanOf(undefined), undefined)
})

t.test('a TLS Secret\'s summary: the fingerprint openssl prints, the serial, the expiry, and why memcached would refuse the pair', async (t) => {
  const pki = makePki()
  const next = renewed(pki)
  const x = new X509Certificate(next.crt)
  const ok = certificateSummary({ data: { 'tls.crt': Buffer.from(next.crt).toString('base64'), 'tls.key': Buffer.from(next.key).toString('base64') } })
  t.same(ok, { fingerprint: x.fingerprint256, serial: x.serialNumber.toUpperCase(), notAfter: new Date(x.validTo).toISOString().replace(/\.\d{3}Z$/, 'Z') })
  t.equal(fingerprintOf(x.raw), x.fingerprint256)
  const problem = (data: Record<string, string>) => {
    const p = certificateSummary({ stringData: data })?.problem
    return p && describeProblem(p)
  }
  t.equal(problem({ 'tls.crt': next.crt, 'tls.key': pki.key }), 'tls.key is not the key of the certificate in tls.crt')
  t.equal(problem({ 'tls.crt': next.crt }), 'the Secret has no tls.key')
  t.equal(problem({ 'tls.crt': 'cert-1' }), 'tls.crt is not a PEM certificate')
  t.equal(problem({ 'tls.crt': next.crt, 'tls.key': 'key-1' }), 'tls.key is not a PEM private key')
  t.equal(certificateSummary({ stringData: { passwords: 'a:b' } }), undefined, 'no tls.crt, no summary')
  const cached = secretSummary({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'n' }, data: { 'tls.crt': Buffer.from(next.crt).toString('base64'), 'tls.key': Buffer.from(next.key).toString('base64') } } as KubeObject)
  t.same(cached.tls, ok, 'the informer keeps the summary')
  t.notOk(JSON.stringify(cached).includes('PRIVATE KEY') || JSON.stringify(cached).includes(Buffer.from(next.key).toString('base64')), 'never the key')
})
