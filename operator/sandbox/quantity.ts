/** Moved to operator/kube (shared by the operator, the CLI and the sandbox). */
export * from '../kube/quantity.ts'
