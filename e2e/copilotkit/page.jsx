// The support page: CopilotKit's chat, its runs sent to the runtime at /api/copilotkit.
import { CopilotChat, CopilotKitProvider } from "@copilotkit/react-core/v2";
import "@copilotkit/react-core/v2/styles.css";
import { Interrupts, PickDate, ResumeThread, threadId } from "./support.jsx";

export function Support() {
  return (
    <CopilotKitProvider runtimeUrl="/api/copilotkit" agentId="support" enableInspector={false}
                        onError={({ error }) => console.error("support chat:", error)}>
      <ResumeThread />
      <PickDate />
      <Interrupts />
      {/* CopilotKit's icon-only buttons have no name a screen reader can say: give them one. */}
      <CopilotChat agentId="support" threadId={threadId}
                   input={{ sendButton: { "aria-label": "Send" }, addMenuButton: { "aria-label": "Add to the message" } }} />
    </CopilotKitProvider>
  );
}
