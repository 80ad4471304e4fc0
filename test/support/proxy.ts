/** A recording proxy for tests: it stands in front of a server, hands each request's body to `record`, and forwards the request unchanged. */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'

/**
 * Starts the proxy in front of `upstream` (closed when `t` ends); returns its URL. With
 * `authorization`, requests that carry none get it, as `kubectl proxy` adds its credentials
 * (kubectl itself sends none over plain HTTP).
 */
export async function recordingProxy(t: Test, upstream: string, record: (req: http.IncomingMessage, body: Buffer) => void, authorization?: string): Promise<string> {
  const proxy = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      record(req, body)
      const headers = authorization && !req.headers.authorization ? { ...req.headers, authorization } : req.headers
      const up = http.request(upstream + (req.url ?? '/'), { method: req.method, headers }, (upRes) => {
        res.writeHead(upRes.statusCode ?? 500, upRes.headers)
        upRes.pipe(res)
      })
      up.end(body)
    })
  })
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => proxy.close(() => r())))
  return `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
}
