import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("itap_at_bias")
launch_gradio_widget(module)
