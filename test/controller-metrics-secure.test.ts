/**
 * /metrics over HTTPS with authentication and authorization, as controller-runtime's
 * filters.WithAuthenticationAndAuthorization serves it (pkg/metrics/filters): the bearer token is
 * reviewed by the API server (TokenReview), its user must be allowed `get` on /metrics
 * (SubjectAccessReview); 401 "Unauthorized" without a valid token, 403 "Authorization denied for
 * user <name>" without the permission, 500 when a review fails. Against the sandbox's own
 * TokenReview and SubjectAccessReview, with real tokens and kustomize/default's RBAC.
 */
import { execFile } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import http, { type IncomingMessage } from 'node:http'
import https from 'node:https'
import { join } from 'node:path'
import { X509Certificate } from 'node:crypto'
import pino from 'pino'
import t, { type Test } from 'tap'
import { memcachedCRD } from '../operator/api/crd.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { bearerToken, kubeMetricsAuthorizer } from '../operator/controller/metrics-auth.ts'
import { selfSignedCertificate } from '../operator/controller/metrics-tls.ts'
import { startOperator, type RunOptions } from '../operator/cli/run.ts'
import { packageVersion } from '../operator/cli/io.ts'
import { loadChart } from '../operator/render/chart.ts'
import { startSandbox, type Sandbox } from '../operator/sandbox/index.ts'
import { kustomize } from './deploy-manifests.ts'
import { captureIO } from './support/io.ts'
import { clientFor } from './support/operator.ts'
import { tempDir } from './support/tmp.ts'
import { kubectlPath } from './support/tools.ts'

const NS = 'memcached-operator-system'
const SA = 'memcached-operator-controller-manager'
const UA = `memcached-operator/${packageVersion()}`
const chart = loadChart()

interface Answer {
  status: number
  body: string
  cert?: X509Certificate
}

function scrape(address: string, token?: string, opts: { ca?: string; path?: string } = {}): Promise<Answer> {
  const port = Number(address.slice(address.lastIndexOf(':') + 1))
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: '127.0.0.1', port, path: opts.path ?? '/metrics', agent: false, servername: 'localhost', ...(opts.ca ? { ca: opts.ca } : { rejectUnauthorized: false }), headers: token ? { authorization: `Bearer ${token}` } : {} },
      (res) => {
        const raw = (res.socket as import('node:tls').TLSSocket).getPeerX509Certificate?.()
        let body = ''
        res.on('data', (c: Buffer) => (body += c.toString('utf8')))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, ...(raw ? { cert: raw } : {}) }))
      },
    )
    req.on('error', reject)
    req.end()
  })
}

function plain(address: string, path: string): Promise<{ status: number; body: string }> {
  const port = Number(address.slice(address.lastIndexOf(':') + 1))
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = ''
      res.on('data', (c: Buffer) => (body += c.toString('utf8')))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    }).on('error', reject)
  })
}

async function installed(t: Test): Promise<{ sandbox: Sandbox; asOperator: string }> {
  const sandbox = await startSandbox({ requestLogSize: 100_000, installCRDs: [memcachedCRD(chart) as unknown as KubeObject] })
  t.teardown(() => sandbox.close())
  const user = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => user.close())
  await user.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
  const rbac = kustomize('default').filter((o) => o.kind === 'ServiceAccount' || o.apiVersion === 'rbac.authorization.k8s.io/v1')
  // Prometheus's ServiceAccount may read the metrics, as the comment of metrics_reader_role.yaml says.
  rbac.push({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'prometheus-metrics' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'memcached-operator-metrics-reader' }, subjects: [{ kind: 'ServiceAccount', name: 'prometheus', namespace: 'monitoring' }] } as unknown as KubeObject)
  await new Promise<void>((done, fail) => {
    const kubectl = execFile(kubectlPath(), ['--kubeconfig', sandbox.kubeconfigPath, 'apply', '--server-side', '-f', '-'], (err) => (err ? fail(err) : done()))
    kubectl.stdin!.end(rbac.map((o) => JSON.stringify(o)).join('\n'))
  })
  return { sandbox, asOperator: await sandbox.kubeconfigFor({ user: `system:serviceaccount:${NS}:${SA}` }) }
}

const options = (kubeconfig: string, over: Partial<RunOptions> = {}): RunOptions => ({ kubeconfig, namespace: [], concurrency: '1', resyncPeriod: '10m', leaderElectionId: 'memcached-operator-leader', metricsBindAddress: '127.0.0.1:0', healthProbeBindAddress: '127.0.0.1:0', metricsSecure: true, ...over })

t.test('only a token the API server authenticates, of a user allowed get on /metrics, reads the metrics; answers are cached', async (t) => {
  const { sandbox, asOperator } = await installed(t)
  const op = await startOperator(options(asOperator), captureIO(), pino({ level: 'silent' }), () => chart)
  t.teardown(() => op.stop())
  const address = op.endpoints.metricsAddress!
  t.ok(op.endpoints.metricsSecure)
  const prometheus = sandbox.issueToken({ user: 'system:serviceaccount:monitoring:prometheus' })
  const other = sandbox.issueToken({ user: 'system:serviceaccount:monitoring:other' })

  const none = await scrape(address)
  t.same([none.status, none.body], [401, 'Unauthorized\n'])
  t.same([(await scrape(address, 'not-a-token')).status, (await scrape(address, 'not-a-token')).body], [401, 'Unauthorized\n'])
  const denied = await scrape(address, other)
  t.same([denied.status, denied.body], [403, 'Authorization denied for user system:serviceaccount:monitoring:other\n'])
  const ok = await scrape(address, prometheus)
  t.equal(ok.status, 200)
  t.match(ok.body, /^controller_runtime_active_workers\{controller="memcached"\} 0$/m)
  t.match(ok.body, /^workqueue_unfinished_work_seconds\{name="memcached"\} /m)
  t.match(ok.cert?.subject, /CN=localhost/, 'a self-signed certificate for localhost')
  t.equal(ok.cert?.issuer, ok.cert?.subject)
  t.ok(ok.cert?.checkIP('127.0.0.1'))
  await t.rejects(scrape(address, prometheus, { ca: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n' }), 'not trusted by default')

  const reviews = () => {
    const log = sandbox.requests.log().filter((r) => r.userAgent === UA && r.verb === 'create')
    return { tokens: log.filter((r) => r.resource === 'tokenreviews').length, access: log.filter((r) => r.resource === 'subjectaccessreviews').length }
  }
  const before = reviews()
  t.same(before, { tokens: 3, access: 2 }, 'one TokenReview per token, one SubjectAccessReview per authenticated user')
  for (let i = 0; i < 3; i++) t.equal((await scrape(address, prometheus)).status, 200)
  t.equal((await scrape(address, other)).status, 403)
  t.same(reviews(), before, 'cached: no review for a scrape of a known token')
  t.equal((await plain(op.endpoints.healthProbeAddress!, '/readyz')).status, 200, 'the probes stay plain HTTP for the kubelet')
})

t.test('a review that fails is a 500, not an opening', async (t) => {
  const { sandbox, asOperator } = await installed(t)
  const errors: string[] = []
  const log = pino({ level: 'error' }, { write: (line: string) => void errors.push(line) })
  const op = await startOperator(options(asOperator), captureIO(), log, () => chart)
  t.teardown(() => op.stop())
  const address = op.endpoints.metricsAddress!
  sandbox.faults.set({ errorRate: 1, resources: ['tokenreviews'] })
  const failed = await scrape(address, sandbox.issueToken({ user: 'system:serviceaccount:monitoring:prometheus' }))
  t.same([failed.status, failed.body], [500, 'Authentication failed\n'])
  sandbox.faults.set({ errorRate: 1, resources: ['subjectaccessreviews'] })
  const unauthorized = await scrape(address, sandbox.issueToken({ user: 'system:serviceaccount:monitoring:prometheus' }))
  t.same([unauthorized.status, unauthorized.body], [500, 'Authorization for user system:serviceaccount:monitoring:prometheus failed\n'])
  sandbox.faults.set({})
  t.ok(errors.some((l) => /"msg":"Authentication failed"/.test(l)) && errors.some((l) => /"msg":"Authorization for user system:serviceaccount:monitoring:prometheus failed"/.test(l)), 'each failure logged as an error')
})

t.test('--metrics-cert-dir serves its tls.crt/tls.key; plain HTTP without --metrics-secure; bad combinations are refused', async (t) => {
  const { sandbox, asOperator } = await installed(t)
  const dir = join(tempDir('mc-metrics-cert-'), 'certs')
  mkdirSync(dir)
  const pair = await selfSignedCertificate()
  writeFileSync(join(dir, 'tls.crt'), pair.cert)
  writeFileSync(join(dir, 'tls.key'), pair.key)
  const op = await startOperator(options(asOperator, { metricsCertDir: dir }), captureIO(), pino({ level: 'silent' }), () => chart)
  t.teardown(() => op.stop())
  const answer = await scrape(op.endpoints.metricsAddress!, sandbox.issueToken({ user: 'system:serviceaccount:monitoring:prometheus' }), { ca: pair.cert })
  t.equal(answer.status, 200, 'verified against the given certificate')
  t.equal(answer.cert?.fingerprint256, new X509Certificate(pair.cert).fingerprint256)

  const local = await startOperator(options(asOperator, { metricsSecure: false }), captureIO(), pino({ level: 'silent' }), () => chart)
  t.teardown(() => local.stop())
  t.notOk(local.endpoints.metricsSecure)
  const open = await plain(local.endpoints.metricsAddress!, '/metrics')
  t.equal(open.status, 200, 'npm start and the sandbox keep plain, open HTTP')

  await t.rejects(startOperator(options(asOperator, { metricsSecure: false, metricsCertDir: dir }), captureIO(), pino({ level: 'silent' }), () => chart), /--metrics-cert-dir needs --metrics-secure/)
  await t.rejects(startOperator(options(asOperator, { metricsCertDir: join(dir, 'missing') }), captureIO(), pino({ level: 'silent' }), () => chart), /--metrics-cert-dir: cannot read .*missing\/tls\.crt/)
  await t.rejects(startOperator(options(asOperator, { metricsBindAddress: '127.0.0.1:18443', healthProbeBindAddress: '127.0.0.1:18443' }), captureIO(), pino({ level: 'silent' }), () => chart), /an address of their own/)
})

t.test('a rotated certificate in --metrics-cert-dir is served to new connections; a broken one is logged and the previous one kept', async (t) => {
  const { sandbox, asOperator } = await installed(t)
  const dir = join(tempDir('mc-metrics-rotate-'), 'certs')
  mkdirSync(dir)
  const write = (pair: { cert: string; key: string }) => {
    writeFileSync(join(dir, 'tls.crt'), pair.cert)
    writeFileSync(join(dir, 'tls.key'), pair.key)
  }
  const first = await selfSignedCertificate()
  write(first)
  const lines: string[] = []
  const op = await startOperator(options(asOperator, { metricsCertDir: dir, metricsCertCheckMs: 20 }), captureIO(), pino({ level: 'info' }, { write: (l: string) => void lines.push(l) }), () => chart)
  t.teardown(() => op.stop())
  const token = sandbox.issueToken({ user: 'system:serviceaccount:monitoring:prometheus' })
  const served = async () => (await scrape(op.endpoints.metricsAddress!, token)).cert?.fingerprint256
  t.equal(await served(), new X509Certificate(first.cert).fingerprint256)
  const second = await selfSignedCertificate()
  write(second)
  const want = new X509Certificate(second.cert).fingerprint256
  const until = Date.now() + 10_000
  while ((await served()) !== want && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
  t.equal(await served(), want, 'the new certificate, without a restart')
  t.ok(lines.some((l) => /reloaded the metrics certificate/.test(l)))
  // Only what is logged from here on: a check between the good rotation's two file writes may already have logged a failure.
  const mark = lines.length
  writeFileSync(join(dir, 'tls.crt'), 'not a certificate\n')
  const end = Date.now() + 10_000
  while (!lines.slice(mark).some((l) => /cannot reload the metrics certificate/.test(l)) && Date.now() < end) await new Promise((r) => setTimeout(r, 20))
  t.ok(lines.slice(mark).some((l) => /cannot reload the metrics certificate; serving the previous one/.test(l)))
  t.equal(await served(), want, 'still the last good certificate')
})

t.test('bearerToken reads the Authorization header as RFC 6750 spells it', async (t) => {
  t.equal(bearerToken('Bearer abc'), 'abc')
  t.equal(bearerToken('bearer  abc '), 'abc')
  t.equal(bearerToken('Basic abc'), undefined)
  t.equal(bearerToken('Bearer'), undefined)
  t.equal(bearerToken(undefined), undefined)
})

t.test('the authorizer: HEAD is get, the path is the request\'s, cached answers expire (1 min a token, 5 min an allow, 30 s a denial)', async (t) => {
  const { sandbox } = await installed(t)
  const admin = clientFor(sandbox, 'auth-test/1')
  t.teardown(() => admin.close())
  let now = 0
  const authorize = kubeMetricsAuthorizer(admin, { now: () => now })
  const req = (token: string, method = 'GET', url = '/metrics') => ({ method, url, headers: { authorization: `Bearer ${token}` } }) as unknown as IncomingMessage
  const prometheus = sandbox.issueToken({ user: 'system:serviceaccount:monitoring:prometheus' })
  const other = sandbox.issueToken({ user: 'system:serviceaccount:monitoring:other' })
  const count = (resource: string) => sandbox.requests.log().filter((r) => r.userAgent === 'auth-test/1' && r.resource === resource).length
  t.equal(await authorize(req(prometheus, 'HEAD')), undefined, 'HEAD asks for get')
  t.same(await authorize(req(prometheus, 'GET', '/metrics?x=1')), undefined, 'the query is not part of the path')
  t.same(await authorize(req(prometheus, 'GET', '/other')), { status: 403, body: 'Authorization denied for user system:serviceaccount:monitoring:prometheus\n' }, 'the reader role names /metrics only')
  t.same(await authorize(req(other)), { status: 403, body: 'Authorization denied for user system:serviceaccount:monitoring:other\n' })
  t.same([count('tokenreviews'), count('subjectaccessreviews')], [2, 3])
  now += 31_000
  await authorize(req(prometheus))
  await authorize(req(other))
  t.same([count('tokenreviews'), count('subjectaccessreviews')], [2, 4], 'after 31 s only the denial is asked again')
  now += 30_000
  await authorize(req(prometheus))
  t.same([count('tokenreviews'), count('subjectaccessreviews')], [3, 4], 'after a minute the token is reviewed again, the allow still cached')
  now += 5 * 60_000
  await authorize(req(prometheus))
  t.same([count('tokenreviews'), count('subjectaccessreviews')], [4, 5], 'after five minutes the allow is asked again')
})
