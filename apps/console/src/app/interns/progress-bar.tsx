import type { Progress } from '../api/types';

/** Provisioning progress (interface section 5: four steps) as a native progress bar with its step named. */
export function ProgressBar({ progress, name }: { progress: Progress; name: string }) {
  const label = `Step ${progress.step_number} of ${progress.total_steps}: ${progress.step_label}`;
  return (
    <div className="progress">
      <progress max={progress.total_steps} value={progress.step_number} aria-label={`Provisioning ${name}`} aria-valuetext={label} />
      <span className="hint">{label}</span>
    </div>
  );
}
