/**
 * The kubeconfig of a command that talks to a cluster (`run`, `diff`), found as kubectl finds it,
 * with kubectl's messages where it cannot be: client-node alone falls back to
 * http://localhost:8080 when it finds nothing, which turns a missing kubeconfig into a baffling
 * `ECONNREFUSED 127.0.0.1:8080`.
 */
import { KubeConfig } from '@kubernetes/client-node'
import { existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { defaultKubeconfigFiles, loadKubeconfigFiles } from '../controller/credentials.ts'
import { InputError, type CliIO } from './io.ts'

/** Where the service account's token is mounted in a pod (client-go rest.InClusterConfig). */
const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token'

/** One line of an error, whatever the parser's layout (YAML errors span several lines). */
const oneLine = (text: string): string => text.replace(/\s*\n\s*/g, ' ').trim()

/**
 * The kubeconfig of `file` (`--kubeconfig`), else KUBECONFIG, ~/.kube/config or the in-cluster
 * service account; with `context` (`--context`) that context instead of the current one.
 * @throws InputError saying where it looked when there is none, or what is wrong with it
 */
export function loadKubeConfig(file: string | undefined, io: CliIO, context?: string): KubeConfig {
  let kc: KubeConfig
  const files = file ? [resolve(io.cwd, file)] : defaultKubeconfigFiles()
  const where = file ? file : process.env.KUBECONFIG ? `KUBECONFIG=${process.env.KUBECONFIG}` : '~/.kube/config'
  try {
    if (files.length > 0) kc = loadKubeconfigFiles(files)
    else {
      // client-go's InClusterConfig: both variables and the token, else "not running in a cluster".
      if (!process.env.KUBERNETES_SERVICE_HOST || !process.env.KUBERNETES_SERVICE_PORT || !existsSync(SERVICE_ACCOUNT_TOKEN)) {
        throw new InputError(
          `no kubeconfig found: no --kubeconfig, KUBECONFIG is not set, ${join(homedir(), '.kube', 'config')} does not exist, and this is not a pod (KUBERNETES_SERVICE_HOST/PORT unset or no ${SERVICE_ACCOUNT_TOKEN})`,
        )
      }
      // In a pod: the service account's token (re-read by client-node) and CA.
      kc = new KubeConfig()
      kc.loadFromCluster()
    }
  } catch (err) {
    if (err instanceof InputError) throw err
    throw new InputError(`kubeconfig ${where}: ${oneLine(err instanceof Error ? err.message : String(err))}`)
  }
  const name = context ?? kc.getCurrentContext()
  // kubectl's words (clientcmd): `context "nope" does not exist`.
  if (context !== undefined || (name !== undefined && name !== '' && kc.contexts.length > 0)) {
    if (!kc.getContextObject(name)) throw new InputError(`kubeconfig ${where}: context ${JSON.stringify(name)} does not exist`)
    kc.setCurrentContext(name)
  }
  if (!kc.getCurrentCluster()) {
    throw new InputError(name ? `kubeconfig ${where}: context ${JSON.stringify(name)} names no cluster that the kubeconfig defines` : `kubeconfig ${where}: no current-context (give --context, or set one with kubectl config use-context)`)
  }
  return kc
}

/** The namespace of the kubeconfig's current context, as kubectl takes it for objects without one. */
export function contextNamespace(kc: KubeConfig): string | undefined {
  const ns = kc.getContextObject(kc.getCurrentContext())?.namespace
  return ns === undefined || ns === '' ? undefined : ns
}

/** Names the server and the user of the current context: who was refused, where. */
export function identityOf(kc: KubeConfig): string {
  return `user ${JSON.stringify(kc.getCurrentUser()?.name ?? '')} at ${kc.getCurrentCluster()?.server ?? '?'} (context ${JSON.stringify(kc.getCurrentContext())})`
}
