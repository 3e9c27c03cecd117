import { useEffect, useId, useRef, type ReactNode } from 'react';

/**
 * A modal confirmation on the native `<dialog>`: focus moves into it and is kept there, Escape cancels, the page
 * behind is inert. `open` drives it; the confirm button may be held back (`confirmDisabled`) until a condition is met.
 */
export function ConfirmDialog(props: {
  open: boolean;
  title: string;
  children?: ReactNode;
  confirmLabel: string;
  confirmDisabled?: boolean;
  busy?: boolean;
  className?: string;
  onConfirm(): void;
  onCancel(): void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (dialog === null) return;
    if (props.open && !dialog.open) dialog.showModal();
    if (!props.open && dialog.open) dialog.close();
  }, [props.open]);
  const titleId = useId();
  return (
    <dialog ref={ref} aria-labelledby={titleId} onCancel={props.onCancel} className={`dialog ${props.className ?? ''}`}>
      <h2 id={titleId}>{props.title}</h2>
      {props.children}
      <div className="actions">
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
        <button type="button" className="danger" disabled={props.confirmDisabled === true || props.busy === true} onClick={props.onConfirm}>
          {props.busy === true ? 'Working…' : props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}
