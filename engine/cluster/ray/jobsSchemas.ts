/**
 * What the Ray Jobs REST API sends back (Ray ≥ 2.9, checked against 2.52.1; docs/scale-out.md §1), as zod
 * schemas: every response is parsed here before the client uses it. Unknown fields are kept out (z.object strips
 * them), so a newer server's extra fields (retry_policy, attempt_number, …) pass.
 */
import { z } from 'zod';

export const JOB_STATUSES = ['PENDING', 'RUNNING', 'STOPPED', 'SUCCEEDED', 'FAILED'] as const;
export type RayJobStatus = (typeof JOB_STATUSES)[number];
export const TERMINAL_STATUSES: ReadonlySet<RayJobStatus> = new Set(['STOPPED', 'SUCCEEDED', 'FAILED']);

export const versionSchema = z.object({
  version: z.string(),
  ray_version: z.string(),
  ray_commit: z.string().optional(),
  session_name: z.string().optional(),
});
export type RayVersion = z.infer<typeof versionSchema>;

export const submitResponseSchema = z.object({ submission_id: z.string(), job_id: z.string().nullish() });

const nullableNumber = z.number().nullish();

export const jobDetailsSchema = z.object({
  type: z.string().nullish(),
  job_id: z.string().nullish(),
  submission_id: z.string().nullish(),
  status: z.enum(JOB_STATUSES),
  entrypoint: z.string().nullish(),
  message: z.string().nullish(),
  error_type: z.string().nullish(),
  start_time: nullableNumber,
  end_time: nullableNumber,
  metadata: z.record(z.string(), z.string()).nullish(),
  runtime_env: z.record(z.string(), z.unknown()).nullish(),
  driver_exit_code: nullableNumber,
  /**
   * What the job asked Ray for, where a Ray version sends it: Ray keeps it (JobInfo) but its REST job details do not
   * carry it (Ray 2.52.1's JobDetails has no such field), so mars-lab's own jobs also say it in their metadata.
   */
  entrypoint_num_cpus: nullableNumber,
  entrypoint_num_gpus: nullableNumber,
});
export type RayJobDetails = z.infer<typeof jobDetailsSchema>;

/** The metadata key under which a mars-lab job records the GPUs it asked Ray for (rayStudy.ts submitRun). */
export const GPUS_METADATA_KEY = 'mars_lab_gpus';

/** The metadata key under which a mars-lab job records the real model its run trains (rayStudy.ts submitRun). */
export const MODEL_METADATA_KEY = 'mars_lab_model';

/** The real model a mars-lab job trains (catalogue name or path), from its metadata; undefined for none. */
export function jobModel(job: RayJobDetails): string | undefined {
  const m = job.metadata?.[MODEL_METADATA_KEY];
  return typeof m === 'string' && m !== '' ? m : undefined;
}

/** The GPUs a job asked for, from Ray's details or, for mars-lab's jobs, their metadata; 0 when neither says. */
export function jobGpus(job: RayJobDetails): number {
  if (job.entrypoint_num_gpus) return job.entrypoint_num_gpus;
  const recorded = Number(job.metadata?.[GPUS_METADATA_KEY]);
  return Number.isFinite(recorded) && recorded > 0 ? recorded : 0;
}

export const jobListSchema = z.array(jobDetailsSchema);
export const logsSchema = z.object({ logs: z.string() });
export const stopResponseSchema = z.object({ stopped: z.boolean() });
export const deleteResponseSchema = z.object({ deleted: z.boolean() });

/** POST /api/jobs/: only the keys that are set are sent (older servers reject unknown ones). */
export const submitRequestSchema = z.object({
  entrypoint: z.string().min(1),
  submission_id: z.string().min(1).optional(),
  runtime_env: z.record(z.string(), z.unknown()).optional(),
  /** The server accepts string → string only. */
  metadata: z.record(z.string(), z.string()).optional(),
  entrypoint_num_cpus: z.number().nonnegative().optional(),
  entrypoint_num_gpus: z.number().nonnegative().optional(),
  entrypoint_resources: z.record(z.string(), z.number()).optional(),
  entrypoint_memory: z.number().int().nonnegative().optional(),
});
export type RaySubmitRequest = z.infer<typeof submitRequestSchema>;
