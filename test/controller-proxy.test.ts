/**
 * The proxy of API requests from HTTPS_PROXY, HTTP_PROXY and NO_PROXY, held to client-go's choice:
 * Go's golang.org/x/net/http/httpproxy rules (`config.init`, `useProxy`) wrapped in apimachinery's
 * `NewProxierWithNoProxyCIDR` (k8s.io/apimachinery/pkg/util/net/http.go), so that a NO_PROXY CIDR
 * (OpenShift's cluster-wide proxy lists the service network as one) keeps the in-cluster server,
 * an IP address, off the proxy.
 */
import http from 'node:http'
import { networkInterfaces } from 'node:os'
import type { AddressInfo } from 'node:net'
import { KubeConfig } from '@kubernetes/client-node'
import t, { type Test } from 'tap'
import { KubeClient } from '../operator/controller/client.ts'
import { NoProxy, ProxyConfigError, proxyEnvFor, proxyFor } from '../operator/controller/proxy.ts'

const REF = { apiVersion: 'v1', kind: 'Namespace', name: 'default' }

/** The first address of this host that is not loopback (loopback is never proxied, so it cannot show NO_PROXY at work). */
function hostAddress(family: 'IPv4' | 'IPv6'): string | undefined {
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (!a.internal && a.family === family && !a.address.startsWith('fe80')) return a.address
  return undefined
}

async function listen(t: Test, srv: http.Server, host: string): Promise<number> {
  await new Promise<void>((r) => srv.listen(0, host, r))
  t.teardown(() => new Promise<void>((r) => {
    srv.close(() => r())
    srv.closeAllConnections()
  }))
  return (srv.address() as AddressInfo).port
}

/** A fake API server on `host`, and a fake proxy on 127.0.0.1 that records what it is asked and answers 502 (it cannot reach the service network). */
async function bed(t: Test, host: string): Promise<{ server: string; proxy: string; proxied: string[] }> {
  const api = http.createServer((_q, s) => {
    s.writeHead(200, { 'Content-Type': 'application/json' })
    s.end('{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}')
  })
  const proxied: string[] = []
  const proxy = http.createServer((q, s) => {
    proxied.push(`${q.method} ${q.url}`)
    s.writeHead(502)
    s.end('proxy cannot reach the service network')
  })
  const apiPort = await listen(t, api, host)
  const proxyPort = await listen(t, proxy, '127.0.0.1')
  return { server: `http://${host.includes(':') ? `[${host}]` : host}:${apiPort}`, proxy: `http://127.0.0.1:${proxyPort}`, proxied }
}

function clientOf(t: Test, server: string): KubeClient {
  const kc = new KubeConfig()
  kc.loadFromOptions({ clusters: [{ name: 'c', server, skipTLSVerify: true }], users: [{ name: 'u' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' })
  const c = new KubeClient(kc, { userAgent: 'proxy-test' })
  t.teardown(() => c.close())
  return c
}

function withEnv(t: Test, env: Record<string, string | undefined>): void {
  const names = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'NO_PROXY', 'no_proxy']
  const saved = Object.fromEntries(names.map((n) => [n, process.env[n]]))
  t.teardown(() => {
    for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k]
    else process.env[k] = v
  })
  for (const n of names) delete process.env[n]
  for (const [k, v] of Object.entries(env)) if (v !== undefined) process.env[k] = v
}

t.test('an IPv4 server NO_PROXY excludes by a CIDR is reached directly, as client-go reaches it', async (t) => {
  const ip = hostAddress('IPv4')
  if (ip === undefined) throw new Error('this test needs a non-loopback IPv4 address on the host')
  const b = await bed(t, ip)
  const cidr24 = `${ip.split('.').slice(0, 3).join('.')}.0/24`
  for (const noProxy of [ip, cidr24, `.svc,.cluster.local, ${ip}/32 `, '10.0.0.0/8,*']) {
    await t.test(`NO_PROXY=${JSON.stringify(noProxy)}`, async (t) => {
      withEnv(t, { HTTP_PROXY: b.proxy, NO_PROXY: noProxy })
      t.equal((await clientOf(t, b.server).get(REF)).metadata.name, 'default')
      t.same(b.proxied, [], 'nothing went through the proxy')
    })
  }
  await t.test('a CIDR that does not hold the server: through the proxy', async (t) => {
    withEnv(t, { HTTP_PROXY: b.proxy, no_proxy: '10.0.0.0/8,.svc' })
    await t.rejects(clientOf(t, b.server).get(REF), /HTTP 502/)
    t.equal(b.proxied.length, 1)
    t.match(b.proxied[0], `GET ${b.server}/api/v1/namespaces/default`)
  })
})

t.test('an IPv6 server NO_PROXY excludes by a CIDR is reached directly', async (t) => {
  const ip = hostAddress('IPv6')
  // Loopback is never proxied, so without a routable IPv6 address the choice is checked alone.
  if (ip === undefined) {
    t.equal(proxyFor(new URL('http://[fd00::2]:6443'), { HTTP_PROXY: 'http://p:1', NO_PROXY: 'fd00::/8' }), undefined)
    return
  }
  const b = await bed(t, ip)
  withEnv(t, { HTTP_PROXY: b.proxy, NO_PROXY: `.svc,${ip}/64` })
  t.equal((await clientOf(t, b.server).get(REF)).metadata.name, 'default')
  t.same(b.proxied, [])
})

t.test('NO_PROXY entries are matched as Go\'s httpproxy matches them', async (t) => {
  const P = 'http://proxy.example:3128'
  const uses = (server: string, noProxy: string, extra: Record<string, string> = {}): boolean => proxyFor(new URL(server), { HTTPS_PROXY: P, HTTP_PROXY: P, NO_PROXY: noProxy, ...extra }) !== undefined
  // [server, NO_PROXY, proxied?]
  const cases: [string, string, boolean][] = [
    ['https://172.30.0.1', '172.30.0.0/16', false],
    ['https://172.31.0.1', '172.30.0.0/16', true],
    ['https://172.30.0.1:443', '172.30.0.1/32', false],
    ['https://10.1.2.3', '10.1.2.0/33', true], // not a CIDR, not an IP, not a name that matches
    ['https://[fd00::1]:6443', 'fd00::/8', false],
    ['https://[fe80::1]:6443', 'fd00::/8', true],
    ['https://[::ffff:172.30.0.1]', '172.30.0.0/16', false],
    ['https://172.30.0.1', '172.30.0.1', false],
    ['https://172.30.0.1:6443', '172.30.0.1:6443', false],
    ['https://172.30.0.1:6443', '172.30.0.1:443', true],
    ['https://172.30.0.1', '172.30.0.1:443', false], // the scheme's default port
    ['https://[fd00::1]:6443', '[fd00::1]:6443', false],
    ['https://[fd00::1]:6443', 'fd00:0::1', false],
    ['https://api.example.com', 'example.com', false],
    ['https://example.com', 'example.com', false],
    ['https://notexample.com', 'example.com', true],
    ['https://example.com', '.example.com', true],
    ['https://api.example.com', '.example.com', false],
    ['https://example.com', '*.example.com', true],
    ['https://api.example.com', '*.example.com', false],
    ['https://API.Example.COM', 'example.com', false],
    ['https://api.example.com:6443', 'example.com:6443', false],
    ['https://api.example.com:6443', 'example.com:443', true],
    ['https://api.example.com', ' , ,foo.org,  EXAMPLE.com  ', false],
    ['https://anything.example', '*', false],
    ['https://anything.example', '', true],
    ['https://kubernetes.default.svc', '.svc,.cluster.local', false],
    ['https://localhost:6443', '', false],
    ['https://127.0.0.5', '', false],
    ['https://[::1]:6443', '', false],
  ]
  for (const [server, noProxy, proxied] of cases) t.equal(uses(server, noProxy), proxied, `${server} with NO_PROXY=${JSON.stringify(noProxy)}: ${proxied ? 'proxied' : 'direct'}`)
  t.equal(new NoProxy('10.0.0.0/8').excludes('api.example', '443'), false, 'a name is never in a CIDR')
  // Which variable: HTTPS_PROXY for https, HTTP_PROXY for http; the upper-case name first; lower-case read too.
  t.equal(proxyFor(new URL('https://10.0.0.1'), { HTTP_PROXY: P }), undefined, 'an https server does not use HTTP_PROXY')
  t.equal(proxyFor(new URL('http://10.0.0.1'), { HTTPS_PROXY: P }), undefined, 'an http server does not use HTTPS_PROXY')
  t.equal(proxyFor(new URL('https://10.0.0.1'), { https_proxy: P })?.href, 'http://proxy.example:3128/')
  t.equal(proxyFor(new URL('https://10.0.0.1'), { HTTPS_PROXY: P, https_proxy: 'http://other:1' })?.href, 'http://proxy.example:3128/')
  t.equal(proxyFor(new URL('https://10.0.0.1'), { HTTPS_PROXY: P, no_proxy: '10.0.0.0/8' }), undefined, 'lower-case no_proxy')
  t.equal(proxyFor(new URL('https://10.0.0.1'), { HTTPS_PROXY: 'proxy.example:3128' })?.href, 'http://proxy.example:3128/', 'a proxy without a scheme is http://')
  t.equal(proxyFor(new URL('https://10.0.0.1'), { HTTPS_PROXY: '127.0.0.1:3128' })?.href, 'http://127.0.0.1:3128/')
  t.equal(proxyFor(new URL('https://10.0.0.1'), { HTTPS_PROXY: 'https://secure.proxy:443' })?.href, 'https://secure.proxy/')
  t.throws(() => proxyFor(new URL('https://10.0.0.1'), { HTTPS_PROXY: 'socks5://s:1080' }), new ProxyConfigError('HTTPS_PROXY="socks5://s:1080": only http:// and https:// proxies are supported, not socks5'))
  t.throws(() => proxyFor(new URL('http://10.0.0.1'), { HTTP_PROXY: 'http://exa mple:1' }), /HTTP_PROXY="http:\/\/exa mple:1" is not a proxy URL/)
  // Node is handed only the chosen proxy, with nothing left for its own (CIDR-blind) NO_PROXY matcher.
  t.same(proxyEnvFor(new URL('https://10.9.0.1'), { HTTPS_PROXY: P, NO_PROXY: '.svc' }), { proxyEnv: { HTTPS_PROXY: 'http://proxy.example:3128/' } })
  t.same(proxyEnvFor(new URL('http://10.9.0.1'), { HTTP_PROXY: P }), { proxyEnv: { HTTP_PROXY: 'http://proxy.example:3128/' } })
  t.same(proxyEnvFor(new URL('https://10.9.0.1'), { HTTPS_PROXY: P, NO_PROXY: '10.9.0.0/16' }), {})
})
