import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("gfg_detection")
launch_gradio_widget(module)
