/**
 * Credentials that change while the operator runs, held to client-go's behaviour: a kubeconfig
 * `token-file` is re-read every minute and trimmed (transport.NewCachedFileTokenSource); an exec
 * plugin (plugin/pkg/client/auth/exec) runs once for many waiting requests, gets
 * KUBERNETES_EXEC_INFO, and runs again when its credential expires or the server answers 401.
 */
import http from 'node:http'
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { KubeConfig } from '@kubernetes/client-node'
import t, { type Test } from 'tap'
import { stringify } from 'yaml'
import { loadKubeConfig } from '../operator/cli/run.ts'
import { KubeClient } from '../operator/controller/client.ts'
import { trimBearer } from '../operator/controller/credentials.ts'
import { captureIO } from './support/io.ts'
import { tempDir } from './support/tmp.ts'

const REF = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'c' }

/** An API server that answers one ConfigMap to the tokens it accepts, 401 to others, and records them. */
async function server(t: Test, accepts: (token: string | undefined) => boolean = () => true): Promise<{ url: string; seen: (string | undefined)[] }> {
  const seen: (string | undefined)[] = []
  const srv = http.createServer((req, res) => {
    seen.push(req.headers.authorization)
    const ok = accepts(req.headers.authorization?.replace(/^Bearer /, ''))
    const body = ok
      ? JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'default' } })
      : JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 })
    res.writeHead(ok ? 200 : 401, { 'Content-Type': 'application/json' })
    res.end(body)
  })
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => {
    srv.close(() => r())
    srv.closeAllConnections()
  }))
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, seen }
}

/** Writes a kubeconfig file for one user and loads it as `run --kubeconfig` does. */
function kubeconfigFile(dir: string, server: string, user: Record<string, unknown>): KubeConfig {
  const file = join(dir, 'kubeconfig')
  writeFileSync(file, stringify({ apiVersion: 'v1', kind: 'Config', clusters: [{ name: 'c', cluster: { server, 'certificate-authority-data': Buffer.from('not a real CA').toString('base64') } }], users: [{ name: 'u', user }], contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }], 'current-context': 'x' }))
  return loadKubeConfig(file, captureIO('', dir))
}

/** Runs `fn` with the clock `ms` ahead (client-node's file token source reads `new Date()`). */
async function later<T>(ms: number, fn: () => Promise<T>): Promise<T> {
  const RealDate = Date
  class Later extends RealDate {
    constructor(...args: []) {
      if (args.length === 0) super(RealDate.now() + ms)
      else super(...(args as unknown as [number]))
    }
    static override now(): number {
      return RealDate.now() + ms
    }
  }
  globalThis.Date = Later as DateConstructor
  try {
    return await fn()
  } finally {
    globalThis.Date = RealDate
  }
}

t.test('a token file is trimmed, and re-read once a minute', async (t) => {
  const s = await server(t)
  const dir = tempDir('mc-cred-')
  writeFileSync(join(dir, 'token'), 'first-token\n')
  const client = new KubeClient(kubeconfigFile(dir, s.url, { 'token-file': 'token' }), { userAgent: 'cred-test' })
  t.teardown(() => client.close())
  await client.get(REF)
  t.equal(s.seen.at(-1), 'Bearer first-token', 'the trailing newline is not sent')
  writeFileSync(join(dir, 'token'), 'rotated-token\n')
  await client.get(REF)
  t.equal(s.seen.at(-1), 'Bearer first-token', 'within the minute the cached token')
  await later(61_000, () => client.get(REF))
  t.equal(s.seen.at(-1), 'Bearer rotated-token', 'a minute later the file is read again')
})

t.test('bearer headers are trimmed whatever their source', async (t) => {
  t.equal(trimBearer('Bearer abc\n'), 'Bearer abc')
  t.equal(trimBearer('Bearer  abc \r\n'), 'Bearer abc')
  t.equal(trimBearer('Basic YTpi'), 'Basic YTpi')
})

/**
 * An exec plugin (a shell script): it counts its runs, keeps the KUBERNETES_EXEC_INFO it got, and
 * prints token `t<run>` that expires `ttl` seconds later (none when ttl is 0); `delay` seconds first.
 */
function plugin(dir: string, ttl: number, delay = 0): { command: string; runs: () => number; info: () => Record<string, unknown> } {
  const bin = join(dir, 'bin')
  mkdirSync(bin, { recursive: true })
  const script = join(bin, 'get-token')
  writeFileSync(
    script,
    `#!/bin/sh
sleep ${delay}
echo x >> "${dir}/runs"
n=$(wc -l < "${dir}/runs" | tr -d ' ')
printf '%s' "$KUBERNETES_EXEC_INFO" > "${dir}/info"
exp=""
if [ ${ttl} -gt 0 ]; then exp=$(date -u -d "@$(( $(date +%s) + ${ttl} ))" +%Y-%m-%dT%H:%M:%SZ); exp=",\\"expirationTimestamp\\":\\"$exp\\""; fi
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t%s"%s}}' "$n" "$exp"
`,
  )
  chmodSync(script, 0o755)
  return {
    command: script,
    runs: () => {
      try {
        return readFileSync(join(dir, 'runs'), 'utf8').split('\n').filter(Boolean).length
      } catch {
        return 0
      }
    },
    info: () => JSON.parse(readFileSync(join(dir, 'info'), 'utf8')) as Record<string, unknown>,
  }
}

t.test('an exec plugin runs once for many concurrent requests, and gets KUBERNETES_EXEC_INFO', async (t) => {
  const s = await server(t)
  const dir = tempDir('mc-exec-')
  const p = plugin(dir, 0, 0.3)
  const client = new KubeClient(kubeconfigFile(dir, s.url, { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: p.command, interactiveMode: 'Never' } }), { userAgent: 'cred-test' })
  t.teardown(() => client.close())
  await Promise.all(Array.from({ length: 10 }, () => client.get(REF)))
  t.equal(p.runs(), 1, 'one run for ten requests')
  t.same(new Set(s.seen), new Set(['Bearer t1']))
  t.same(p.info(), { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', spec: { interactive: false } }, 'no cluster without provideClusterInfo')
})

t.test('provideClusterInfo puts the cluster in KUBERNETES_EXEC_INFO', async (t) => {
  const s = await server(t)
  const dir = tempDir('mc-exec-')
  const p = plugin(dir, 0)
  const client = new KubeClient(kubeconfigFile(dir, s.url, { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: p.command, provideClusterInfo: true } }), { userAgent: 'cred-test' })
  t.teardown(() => client.close())
  await client.get(REF)
  t.same(p.info(), { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', spec: { interactive: false, cluster: { server: s.url, 'certificate-authority-data': Buffer.from('not a real CA').toString('base64') } } })
})

t.test('an exec credential is used until it expires, then the plugin runs again', async (t) => {
  const s = await server(t)
  const dir = tempDir('mc-exec-')
  // Three seconds (the plugin writes whole seconds, so it stays valid for more than two).
  const p = plugin(dir, 3)
  const client = new KubeClient(kubeconfigFile(dir, s.url, { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: p.command } }), { userAgent: 'cred-test' })
  t.teardown(() => client.close())
  await client.get(REF)
  await client.get(REF)
  t.equal(p.runs(), 1)
  await new Promise((r) => setTimeout(r, 3100))
  await client.get(REF)
  t.equal(p.runs(), 2, 'expired: run again')
  t.same(s.seen, ['Bearer t1', 'Bearer t1', 'Bearer t2'])
})

t.test('a 401 runs the exec plugin again and the request is sent once more with the new credential', async (t) => {
  const s = await server(t, (token) => token !== 't1')
  const dir = tempDir('mc-exec-')
  const p = plugin(dir, 0)
  // A relative command with a slash is relative to the kubeconfig's directory, as in client-go.
  const client = new KubeClient(kubeconfigFile(dir, s.url, { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: './bin/get-token' } }), { userAgent: 'cred-test' })
  t.teardown(() => client.close())
  t.equal((await client.get(REF)).metadata.name, 'c', 'the request succeeds')
  t.same(s.seen, ['Bearer t1', 'Bearer t2'])
  t.equal(p.runs(), 2)
})

t.test('HTTP_PROXY and NO_PROXY are honoured as client-go honours them; a loopback server is never proxied', async (t) => {
  const s = await server(t)
  const target = new URL(s.url)
  const proxied: string[] = []
  // An HTTP proxy that knows one host name: the API server's.
  const proxy = http.createServer((req, res) => {
    proxied.push(req.url ?? '')
    const url = new URL(req.url ?? '/')
    const up = http.request({ host: target.hostname, port: target.port, path: url.pathname + url.search, method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers)
      r.pipe(res)
    })
    req.pipe(up)
  })
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => {
    proxy.close(() => r())
    proxy.closeAllConnections()
  }))
  const saved = { HTTP_PROXY: process.env.HTTP_PROXY, NO_PROXY: process.env.NO_PROXY }
  t.teardown(() => {
    for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k]
    else process.env[k] = v
  })
  process.env.HTTP_PROXY = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
  const dir = tempDir('mc-proxy-')
  // A name only the proxy can resolve: reached at all means reached through the proxy.
  const named = new KubeClient(kubeconfigFile(dir, `http://kube-api.invalid:${target.port}`, { token: 'x' }), { userAgent: 'proxy-test' })
  t.teardown(() => named.close())
  t.equal((await named.get(REF)).metadata.name, 'c')
  t.same(proxied, [`http://kube-api.invalid:${target.port}/api/v1/namespaces/default/configmaps/c`])
  const loopback = new KubeClient(kubeconfigFile(dir, s.url, { token: 'x' }), { userAgent: 'proxy-test' })
  t.teardown(() => loopback.close())
  await loopback.get(REF)
  t.equal(proxied.length, 1, 'the loopback server was reached directly')
  process.env.NO_PROXY = 'kube-api.invalid'
  const bypassed = new KubeClient(kubeconfigFile(dir, `http://kube-api.invalid:${target.port}`, { token: 'x' }), { userAgent: 'proxy-test' })
  t.teardown(() => bypassed.close())
  await t.rejects(bypassed.get(REF), /ENOTFOUND|getaddrinfo/, 'NO_PROXY: resolved directly, which fails for this name')
  t.equal(proxied.length, 1)
})
