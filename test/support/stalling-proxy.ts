/**
 * A proxy in front of the sandbox for one client: it tags the User-Agent with ` (tag)` (so the
 * sandbox's request log says who sent what) and can stall that client only — hold chosen requests
 * unanswered (never forwarded; dropped when the client gives up), or freeze everything, answers
 * already streaming included (a dead connection: no byte, no error).
 */
import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

export interface StallingProxy {
  url: string
  /** New requests that `pred` selects are held; `undefined` holds none. */
  hold(pred: ((method: string, path: string) => boolean) | undefined): void
  /** While frozen, every new request is held and open answers stop flowing. */
  freeze(frozen: boolean): void
  close(): Promise<void>
}

export async function stallingProxy(target: string, tag: string): Promise<StallingProxy> {
  const to = new URL(target)
  const sockets = new Set<Socket>()
  const flows = new Set<{ up: http.IncomingMessage; res: http.ServerResponse }>()
  let hold: ((method: string, path: string) => boolean) | undefined
  let frozen = false
  const server = http.createServer((req, res) => {
    if (frozen || hold?.(req.method ?? 'GET', req.url ?? '')) {
      req.resume()
      return
    }
    const headers = { ...req.headers, 'user-agent': `${req.headers['user-agent'] ?? ''} (${tag})` }
    const up = http.request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers }, (upRes) => {
      res.writeHead(upRes.statusCode ?? 502, upRes.headers)
      const flow = { up: upRes, res }
      flows.add(flow)
      upRes.on('close', () => flows.delete(flow))
      if (!frozen) upRes.pipe(res)
      upRes.on('error', () => res.destroy())
      upRes.on('aborted', () => res.destroy())
    })
    up.on('error', () => res.destroy())
    req.pipe(up)
    res.on('close', () => up.destroy())
  })
  server.on('connection', (s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    hold: (pred) => (hold = pred),
    freeze(on) {
      frozen = on
      for (const { up, res } of flows) {
        if (on) {
          up.unpipe(res)
          up.pause()
        } else up.pipe(res)
      }
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy()
        server.close(() => r())
      }),
  }
}
