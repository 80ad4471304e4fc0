/**
 * `GET|PUT /sandbox/v1/pod-failures`: read or replace the rules that make pods fail as a kubelet
 * reports it (pod-failures.ts), beside `/sandbox/v1/faults` on the API server's own
 * address, so that `kubectl get --raw` and `kubectl replace --raw` reach them through the kubeconfig.
 * A wrapper of the sandbox's request listener: every other path goes to it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { badRequest, methodNotAllowed, StatusError } from '../errors.ts'
import { PodFailureRuleError, type PodFailures } from './pod-failures.ts'

/** The path of the endpoint. */
export const POD_FAILURES_PATH = '/sandbox/v1/pod-failures'

/** `handler` with {@link POD_FAILURES_PATH} answered from `failures`. */
export function withPodFailures(handler: (req: IncomingMessage, res: ServerResponse) => void, failures: PodFailures): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    if (new URL(req.url ?? '/', 'http://sandbox').pathname !== POD_FAILURES_PATH) return handler(req, res)
    answer(req, failures).then(
      (json) => send(res, 200, json),
      (e: unknown) => {
        const err = e instanceof StatusError ? e : new StatusError(500, 'InternalError', `Internal error occurred: ${e instanceof Error ? e.message : String(e)}`)
        send(res, err.code, JSON.stringify(err.status))
      },
    )
  }
}

async function answer(req: IncomingMessage, failures: PodFailures): Promise<string> {
  if (req.method === 'GET') return JSON.stringify(failures.get())
  if (req.method !== 'PUT') throw methodNotAllowed()
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  let rules: unknown
  try {
    const text = Buffer.concat(chunks).toString('utf8')
    rules = text.trim() === '' ? [] : JSON.parse(text)
  } catch (e) {
    throw badRequest(`error decoding pod failure rules: ${e instanceof Error ? e.message : String(e)}`)
  }
  try {
    return JSON.stringify(failures.set(rules))
  } catch (e) {
    if (e instanceof PodFailureRuleError) throw badRequest(e.message)
    throw e
  }
}

function send(res: ServerResponse, status: number, json: string): void {
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(json), 'Cache-Control': 'no-cache, private' })
  res.end(json)
}
